// Parsing the SVG of hitbox_view in tests with expat (a real XML parser): a
// document that is not well-formed fails, and the elements come back as a
// flat list with their attributes and text for counting and lookups.
// Link EXPAT::EXPAT.
#pragma once

#include <expat.h>

#include <map>
#include <string>
#include <vector>

namespace hitbox::testing {

/// One element of a parsed document.
struct XmlElement {
  std::string name;
  std::map<std::string, std::string> attrs;
  /// Character data directly inside it (e.g. a <title>'s text).
  std::string text;
  /// Index of the parent in XmlDocument::elements (-1 for the root).
  int parent = -1;

  std::string Attr(const std::string& key) const {
    const auto it = attrs.find(key);
    return it == attrs.end() ? std::string() : it->second;
  }
};

/// A parsed document: ok, or the parser's error with its line.
struct XmlDocument {
  bool ok = false;
  std::string error;
  std::vector<XmlElement> elements;

  /// Elements named `name` (any depth).
  std::vector<const XmlElement*> All(const std::string& name) const {
    std::vector<const XmlElement*> out;
    for (const auto& e : elements) {
      if (e.name == name) out.push_back(&e);
    }
    return out;
  }
  /// The element with attribute id == `id`, or null.
  const XmlElement* ById(const std::string& id) const {
    for (const auto& e : elements) {
      if (e.Attr("id") == id) return &e;
    }
    return nullptr;
  }
  /// The text of the first <title> child of `e` ("" if none).
  std::string TitleOf(const XmlElement& e) const {
    const int index = static_cast<int>(&e - elements.data());
    for (const auto& c : elements) {
      if (c.parent == index && c.name == "title") return c.text;
    }
    return "";
  }
};

inline XmlDocument ParseXml(const std::string& text) {
  struct State {
    XmlDocument doc;
    std::vector<int> open;
  } state;
  XML_Parser parser = XML_ParserCreate("UTF-8");
  XML_SetUserData(parser, &state);
  XML_SetElementHandler(
      parser,
      [](void* data, const XML_Char* name, const XML_Char** atts) {
        auto* s = static_cast<State*>(data);
        XmlElement e;
        e.name = name;
        for (int i = 0; atts[i] != nullptr; i += 2) e.attrs[atts[i]] = atts[i + 1];
        e.parent = s->open.empty() ? -1 : s->open.back();
        s->doc.elements.push_back(std::move(e));
        s->open.push_back(static_cast<int>(s->doc.elements.size() - 1));
      },
      [](void* data, const XML_Char*) { static_cast<State*>(data)->open.pop_back(); });
  XML_SetCharacterDataHandler(parser, [](void* data, const XML_Char* s, int len) {
    auto* st = static_cast<State*>(data);
    if (!st->open.empty()) st->doc.elements[static_cast<size_t>(st->open.back())].text.append(s, static_cast<size_t>(len));
  });
  if (XML_Parse(parser, text.data(), static_cast<int>(text.size()), /*isFinal=*/1) == XML_STATUS_OK) {
    state.doc.ok = true;
  } else {
    state.doc.error = std::string(XML_ErrorString(XML_GetErrorCode(parser))) + " at line " +
                      std::to_string(XML_GetCurrentLineNumber(parser));
  }
  XML_ParserFree(parser);
  return state.doc;
}

}  // namespace hitbox::testing
