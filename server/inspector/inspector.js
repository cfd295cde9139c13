// The inspector page: the sessions list (#/) and one session in 3D
// (#/sessions/ID), drawn with three.js from hitboxd's JSON API
// (server/inspector_api.h). While live, the session's changes arrive on
// its event stream (/api/sessions/ID/stream, 10 events a second), read with
// fetch() so that the bearer header can be sent (EventSource cannot).
'use strict';
(function () {
  const LIVE_QUERY_TICKS = 1;  // live: the newest recorded tick drawn (the stream sends one twice a second)
  const SESSIONS_REFRESH_MS = 1000;  // the sessions list, while shown
  const GREY = 0x8a8f98;
  const $ = (id) => document.getElementById(id);

  // --- Access: a bearer token kept for this tab only -------------------------
  function token() { return sessionStorage.getItem('hitbox-token') || ''; }
  function authHeaders() {
    const headers = {};
    if (token()) headers.Authorization = 'Bearer ' + token();
    return headers;
  }
  async function checked(res) {
    if (res.ok) return res;
    const body = await res.json().catch(() => ({ error: 'HTTP ' + res.status }));
    if (res.status === 401 || res.status === 403) {
      showToken(body.error || 'a token is required');
      throw new Error('auth');
    }
    throw new Error(body.error || 'HTTP ' + res.status);
  }
  async function api(path) {
    const res = await checked(await fetch(path, { headers: authHeaders(), cache: 'no-store' }));
    return res.json();
  }
  function showToken(reason) {
    $('token-reason').textContent = reason;
    $('token-form').classList.remove('hidden');
    $('sessions-view').classList.add('hidden');
    $('session-view').classList.add('hidden');
    stopLive();
  }
  $('token-form').addEventListener('submit', (e) => {
    e.preventDefault();
    sessionStorage.setItem('hitbox-token', $('token').value.trim());
    $('token-form').classList.add('hidden');
    route();
  });
  $('forget-token').addEventListener('click', () => {
    sessionStorage.removeItem('hitbox-token');
    route();
  });
  function setStatus(text) { $('status').textContent = text; }
  const fmtBytes = (b) => b >= 1 << 20 ? (b / (1 << 20)).toFixed(1) + ' MiB' : (b / 1024).toFixed(1) + ' KiB';

  // --- Sessions list -------------------------------------------------------
  let sessionsTimer = null;
  async function showSessions() {
    stopLive();
    current = null;
    $('session-view').classList.add('hidden');
    const data = await api('/api/sessions');
    if (current !== null || location.hash.startsWith('#/sessions/')) return;
    $('forget-token').classList.toggle('hidden', !token());
    const rows = data.sessions.map((s) => {
      const tr = document.createElement('tr');
      const rate = (v) => (v === null ? '–' : String(v));
      const cells = [null, s.map || '–', s.colliders, fmtBytes(s.memory_bytes), s.revision,
        s.newest_tick === null ? '–' : s.oldest_tick + '..' + s.newest_tick, rate(s.ticks_per_s),
        rate(s.queries_per_s), s.streams, s.watches, s.recorded];
      cells.forEach((v, i) => {
        const td = document.createElement('td');
        if (i === 0) {
          const a = document.createElement('a');
          a.href = '#/sessions/' + encodeURIComponent(s.id);
          a.textContent = s.id;
          a.className = 'session-link';
          td.appendChild(a);
        } else {
          td.textContent = String(v);
        }
        tr.appendChild(td);
      });
      return tr;
    });
    $('sessions').tBodies[0].replaceChildren(...rows);
    $('maps').tBodies[0].replaceChildren(...data.maps.map((m) => {
      const tr = document.createElement('tr');
      [m.id, m.colliders, m.triangles, fmtBytes(m.memory_bytes)].forEach((v) => {
        const td = document.createElement('td');
        td.textContent = String(v);
        tr.appendChild(td);
      });
      return tr;
    }));
    $('sessions-view').classList.remove('hidden');
    setStatus(data.sessions.length + ' session(s)');
    // Rates need a second read: refreshed while the list is shown.
    clearTimeout(sessionsTimer);
    sessionsTimer = setTimeout(() => {
      if (current === null && !$('sessions-view').classList.contains('hidden')) route();
    }, SESSIONS_REFRESH_MS);
  }

  // --- 3D view -------------------------------------------------------------
  let three = null;  // renderer, scene, camera, controls, groups
  function setupThree() {
    if (three) return three;
    const el = $('viewport');
    const renderer = new THREE.WebGLRenderer({ antialias: true, preserveDrawingBuffer: true });
    renderer.setPixelRatio(window.devicePixelRatio || 1);
    renderer.setClearColor(0x1d2025);
    el.appendChild(renderer.domElement);
    const scene = new THREE.Scene();
    const camera = new THREE.PerspectiveCamera(55, 1, 0.1, 5000);
    camera.position.set(0, 40, 60);
    const controls = new THREE.OrbitControls(camera, renderer.domElement);
    scene.add(new THREE.HemisphereLight(0xffffff, 0x404050, 0.9));
    const sun = new THREE.DirectionalLight(0xffffff, 0.6);
    sun.position.set(30, 80, 40);
    scene.add(sun);
    const map = new THREE.Group(), colliders = new THREE.Group(), queries = new THREE.Group();
    const watches = new THREE.Group();
    scene.add(map, colliders, queries, watches);
    three = { el, renderer, scene, camera, controls, map, colliders, queries, watches, byId: new Map(), frames: 0 };
    const resize = () => {
      const w = el.clientWidth || 800, h = el.clientHeight || 600;
      renderer.setSize(w, h);
      camera.aspect = w / h;
      camera.updateProjectionMatrix();
    };
    window.addEventListener('resize', resize);
    resize();
    const loop = () => {
      controls.update();
      renderer.render(scene, camera);
      ++three.frames;
      requestAnimationFrame(loop);
    };
    loop();
    // A click (not a drag) selects the collider under the pointer.
    let down = null;
    renderer.domElement.addEventListener('pointerdown', (e) => { down = [e.clientX, e.clientY]; });
    renderer.domElement.addEventListener('pointerup', (e) => {
      if (down && Math.hypot(e.clientX - down[0], e.clientY - down[1]) < 4) select(pick(e.clientX, e.clientY));
      down = null;
    });
    return three;
  }

  // Layer colours: 32 hues, far apart for neighbouring layers.
  const layerMaterials = new Map();
  function layerMaterial(layer) {
    if (!layerMaterials.has(layer)) {
      const c = new THREE.Color().setHSL(((layer * 0.381966) % 1 + 1) % 1, 0.65, 0.55);
      layerMaterials.set(layer, new THREE.MeshLambertMaterial({ color: c }));
    }
    return layerMaterials.get(layer);
  }
  // Colliders inside a watch: their layer's colour, lit up.
  const insideMaterials = new Map();
  function insideMaterial(layer) {
    if (!insideMaterials.has(layer)) {
      const m = layerMaterial(layer).clone();
      m.emissive = new THREE.Color(0x7a3d00);
      insideMaterials.set(layer, m);
    }
    return insideMaterials.get(layer);
  }
  const selectedMaterial = new THREE.MeshLambertMaterial({ color: 0xffffff, emissive: 0x555555 });
  const greyMaterial = new THREE.MeshLambertMaterial({ color: GREY, side: THREE.DoubleSide });

  function trianglesGeometry(positions, indices) {
    const g = new THREE.BufferGeometry();
    g.setAttribute('position', new THREE.BufferAttribute(new Float32Array(positions), 3));
    g.setIndex(new THREE.BufferAttribute(new Uint32Array(indices), 1));
    g.computeVertexNormals();
    return g;
  }
  // Geometries shared by every collider of the same shape.
  const geometries = new Map();
  function shapeObject(shape, material) {
    const key = JSON.stringify(shape);
    if (shape.kind === 'compound') {
      const group = new THREE.Group();
      for (const child of shape.children) {
        const o = shapeObject(child.shape, material);
        o.position.fromArray(child.p);
        o.quaternion.fromArray(child.q);
        group.add(o);
      }
      return group;
    }
    if (shape.kind === 'capsule') {
      const group = new THREE.Group();
      const body = new THREE.CylinderBufferGeometry(shape.radius, shape.radius, 2 * shape.half_height, 24);
      group.add(new THREE.Mesh(body, material));
      for (const y of [-shape.half_height, shape.half_height]) {
        const cap = new THREE.Mesh(new THREE.SphereBufferGeometry(shape.radius, 24, 12), material);
        cap.position.y = y;
        group.add(cap);
      }
      return group;
    }
    if (!geometries.has(key)) {
      let g;
      if (shape.kind === 'sphere') g = new THREE.SphereBufferGeometry(shape.radius, 24, 16);
      else if (shape.kind === 'box') g = new THREE.BoxBufferGeometry(2 * shape.half[0], 2 * shape.half[1], 2 * shape.half[2]);
      else if (shape.kind === 'cylinder') g = new THREE.CylinderBufferGeometry(shape.radius, shape.radius, 2 * shape.half_height, 24);
      else if (shape.positions) g = trianglesGeometry(shape.positions, shape.indices);
      else {  // too big to send: its local bounds
        const [lo, hi] = shape.bounds;
        g = new THREE.BoxBufferGeometry(hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2]);
        g.translate((hi[0] + lo[0]) / 2, (hi[1] + lo[1]) / 2, (hi[2] + lo[2]) / 2);
      }
      geometries.set(key, g);
    }
    return new THREE.Mesh(geometries.get(key), material);
  }
  // Object3D.clear() is newer than Debian's three.js (r111).
  function clearGroup(g) { while (g.children.length > 0) g.remove(g.children[0]); }
  function setMaterial(obj, material) {
    obj.traverse((o) => { if (o.isMesh) o.material = material; });
  }

  // --- One session -----------------------------------------------------------
  let current = null;  // {id, live, stream, events, selected, world, recorded, inside, watches}
  async function showSession(id) {
    stopLive();
    $('sessions-view').classList.add('hidden');
    $('session-view').classList.remove('hidden');
    $('session-title').textContent = id;
    const t = setupThree();
    clearGroup(t.map);
    clearGroup(t.colliders);
    clearGroup(t.queries);
    clearGroup(t.watches);
    t.byId.clear();
    current = { id, live: true, stream: null, events: 0, selected: null, world: null, recorded: null,
      mapReady: false, inside: new Set(), watches: [] };
    $('live').checked = true;
    $('selection').textContent = 'click a collider';
    const session = current;
    const map = await api('/api/sessions/' + encodeURIComponent(id) + '/map');
    if (session !== current) return;
    if (map.map !== null) {
      if (map.indices.length > 0) t.map.add(new THREE.Mesh(trianglesGeometry(map.positions, map.indices), greyMaterial));
      for (const c of map.colliders) {
        const o = shapeObject(c.shape, greyMaterial);
        o.position.fromArray(c.p);
        o.quaternion.fromArray(c.q);
        t.map.add(o);
      }
      $('map-triangles').textContent = String(map.triangles);
    }
    current.mapReady = true;
    await refreshWorld(true);
    frame();
    startLive();
  }

  // Places the camera to see the map and the colliders.
  function frame() {
    const box = new THREE.Box3().setFromObject(three.map).union(new THREE.Box3().setFromObject(three.colliders));
    if (box.isEmpty()) return;
    const centre = box.getCenter(new THREE.Vector3());
    const size = Math.max(1, box.getSize(new THREE.Vector3()).length());
    three.controls.target.copy(centre);
    three.camera.position.copy(centre).add(new THREE.Vector3(0, 0.55 * size, 0.75 * size));
    three.camera.near = size / 1000;
    three.camera.far = size * 20;
    three.camera.updateProjectionMatrix();
  }

  // One answer of /world or a full stream event: the whole world.
  async function refreshWorld(fetchQueries) {
    const session = current;
    if (!session) return;
    const tick = session.live ? null : Number($('tick-slider').value);
    const base = '/api/sessions/' + encodeURIComponent(session.id);
    // Only the newest request draws: an older answer arriving late is dropped.
    const seq = session.seq = (session.seq || 0) + 1;
    const world = await api(base + '/world' + (tick === null ? '' : '?tick=' + tick));
    if (session !== current || seq !== session.seq) return;
    drawWorld(world);
    if (world.watches) drawWatches(world.watches);
    if (fetchQueries && $('show-queries').checked) {
      const recorded = await api(base + '/queries' +
        (tick === null ? '?last=' + LIVE_QUERY_TICKS : '?tick=' + Math.floor(tick)));
      if (session !== current || seq !== session.seq) return;
      session.recorded = recorded;
    }
    drawQueries();
  }

  // Draws collider c (new, or its shape or layer changed) or moves it.
  function putCollider(c) {
    const t = three;
    const key = JSON.stringify(c.shape) + '/' + c.layer;
    let o = t.byId.get(c.id);
    if (!o || o.userData.key !== key) {
      if (o) t.colliders.remove(o);
      o = shapeObject(c.shape, colliderMaterial(c.id, c.layer));
      o.userData = { colliderId: c.id, key };
      t.colliders.add(o);
      t.byId.set(c.id, o);
    }
    o.userData.collider = c;
    o.position.fromArray(c.p);
    o.quaternion.fromArray(c.q);
  }
  function colliderMaterial(id, layer) {
    if (current.selected === id) return selectedMaterial;
    return current.inside.has(id) ? insideMaterial(layer) : layerMaterial(layer);
  }
  function removeCollider(id) {
    const o = three.byId.get(id);
    if (o) { three.colliders.remove(o); three.byId.delete(id); }
  }

  function drawWorld(world) {
    const t = three;
    current.world = world;
    const seen = new Set();
    for (const c of world.colliders) {
      seen.add(c.id);
      putCollider(c);
    }
    for (const id of [...t.byId.keys()]) {
      if (!seen.has(id)) removeCollider(id);
    }
    showTicks(world);
    setStatus('revision ' + world.revision + (world.truncated ? ' · ' + world.total + ' colliders, first ' + world.colliders.length + ' drawn' : ''));
    if (current.selected !== null) showSelection(current.selected);
  }

  function showTicks(world) {
    $('drawn-count').textContent = String(three.byId.size);
    const slider = $('tick-slider');
    if (world.oldest_tick !== null) {
      slider.min = String(world.oldest_tick);
      slider.max = String(world.newest_tick);
      if (current.live) slider.value = String(world.newest_tick);
      $('tick-range').textContent = world.oldest_tick + '..' + world.newest_tick;
    } else {
      $('tick-range').textContent = 'no ticks yet';
    }
    $('tick-label').textContent = world.tick === null ? '–' : String(world.tick) + (current.live ? ' (live)' : '');
  }

  // One event of the stream: what changed since the one before.
  function applyEvent(e) {
    const t = three;
    if (e.full) {
      for (const id of [...t.byId.keys()]) removeCollider(id);
      current.recorded = { recording: 1, ticks: [] };
    }
    if (e.added) {
      for (const c of e.added) putCollider(c);
      for (const [id, p, q] of e.moved) {
        const o = t.byId.get(id);
        if (!o) continue;
        o.position.fromArray(p);
        o.quaternion.fromArray(q);
        o.userData.collider = Object.assign({}, o.userData.collider, { p, q });
      }
      for (const id of e.removed) removeCollider(id);
    }
    if (e.watches) drawWatches(e.watches);
    current.world = { tick: e.newest_tick, oldest_tick: e.oldest_tick, newest_tick: e.newest_tick,
      revision: e.revision, total: e.total, truncated: e.truncated };
    showTicks(current.world);
    setStatus('revision ' + e.revision + ' · live, event ' + e.seq +
      (e.truncated ? ' · ' + e.total + ' colliders, ' + t.byId.size + ' drawn' : ''));
    if (e.queries) {
      const rec = current.recorded || { recording: 1, ticks: [] };
      rec.recording = 1;
      rec.ticks.push(e.queries);
      if (rec.ticks.length > LIVE_QUERY_TICKS) rec.ticks.shift();
      current.recorded = rec;
      drawQueries();
    }
    if (current.selected !== null && e.added) showSelection(current.selected);
  }

  // Watches: their shapes in wireframe, the colliders inside them lit up.
  function drawWatches(watches) {
    const t = three;
    clearGroup(t.watches);
    current.watches = watches;
    const inside = new Set();
    for (const w of watches) {
      const o = shapeObject(w.shape, wireMaterial(0xff66ff));
      o.position.fromArray(w.p);
      o.quaternion.fromArray(w.q);
      o.userData = { watchId: w.id };
      t.watches.add(o);
      for (const id of w.inside) inside.add(id);
    }
    const changed = [...inside].filter((id) => !current.inside.has(id))
      .concat([...current.inside].filter((id) => !inside.has(id)));
    current.inside = inside;
    for (const id of changed) {
      const o = t.byId.get(id);
      if (o) setMaterial(o, colliderMaterial(id, o.userData.collider.layer));
    }
    $('watches').textContent = watches.length === 0 ? 'none' : watches.map((w) =>
      'watch ' + w.id + ' ' + w.shape.kind + (w.attach_to === null ? '' : ' on ' + w.attach_to) +
      ': ' + w.inside_count + ' inside' + (w.inside.length ? ' (' + w.inside.slice(0, 8).join(', ') +
      (w.inside_count > 8 ? ', …' : '') + ')' : '')).join('\n');
  }

  const dotGeometry = new THREE.SphereBufferGeometry(0.15, 8, 6);
  const materials = new Map();
  const lineMaterial = (color) => cached('l' + color, () => new THREE.LineBasicMaterial({ color }));
  const dotMaterial = (color) => cached('d' + color, () => new THREE.MeshBasicMaterial({ color }));
  const wireMaterial = (color) => cached('w' + color, () => new THREE.MeshBasicMaterial({ color, wireframe: true }));
  function cached(key, make) {
    if (!materials.has(key)) materials.set(key, make());
    return materials.get(key);
  }

  // Recorded queries: live, every recorded tick; at a past tick, its own.
  function drawQueries() {
    const t = three;
    // Lines are made per drawing: their GPU buffers go with them.
    t.queries.traverse((o) => { if (o.userData.owned) o.geometry.dispose(); });
    clearGroup(t.queries);
    const rec = current.recorded;
    if (!rec || !$('show-queries').checked) { $('queries').textContent = '–'; return; }
    const tick = current.world ? current.world.tick : null;
    // Live: the newest recorded ticks; at a past tick: that tick's (asked so).
    const shown = rec.ticks.filter((e) => current.live || e.tick === Math.floor(tick));
    const line = (a, b, color) => {
      const g = new THREE.BufferGeometry().setFromPoints([new THREE.Vector3(...a), new THREE.Vector3(...b)]);
      const l = new THREE.Line(g, lineMaterial(color));
      l.userData.owned = true;
      t.queries.add(l);
    };
    const dot = (p, color) => {
      const m = new THREE.Mesh(dotGeometry, dotMaterial(color));
      m.position.fromArray(p);
      t.queries.add(m);
    };
    const ghost = (q, at, color) => {
      if (!q.shape) return;
      const o = shapeObject(q.shape, wireMaterial(color));
      o.position.fromArray(at);
      o.quaternion.fromArray(q.q);
      t.queries.add(o);
    };
    let count = 0, hits = 0;
    for (const e of shown) {
      for (const q of e.queries) {
        ++count;
        hits += q.hits.length;
        const end = q.end || q.p.map((v, i) => v + q.translation[i]);
        if (q.kind !== 'overlap') line(q.p, end, q.kind === 'move' ? 0x66ff99 : 0xffd54a);
        if (q.kind === 'overlap') ghost(q, q.p, 0x66ccff);
        if (q.kind === 'cast' && q.hits.length > 0) {
          ghost(q, q.p.map((v, i) => v + q.hits[0].fraction * q.translation[i]), 0xff8844);
        }
        for (const h of q.hits) {
          dot(h.point, 0xff4444);
          line(h.point, h.point.map((v, i) => v + h.normal[i]), 0xff4444);
        }
      }
    }
    $('queries').textContent = rec.recording === 0
      ? 'not recorded yet (recorded while this page is open, or always with hitboxd --record-queries N)'
      : count + ' queries, ' + hits + ' hits in ' + shown.length + ' recorded tick(s)';
  }

  function pick(clientX, clientY) {
    const rect = three.renderer.domElement.getBoundingClientRect();
    const ndc = new THREE.Vector2(((clientX - rect.left) / rect.width) * 2 - 1,
      -((clientY - rect.top) / rect.height) * 2 + 1);
    const ray = new THREE.Raycaster();
    ray.setFromCamera(ndc, three.camera);
    for (const hit of ray.intersectObjects(three.colliders.children, true)) {
      for (let o = hit.object; o; o = o.parent) {
        if (o.userData && o.userData.colliderId !== undefined) return o.userData.colliderId;
      }
    }
    return null;
  }
  function select(id) {
    if (current.selected !== null && three.byId.has(current.selected)) {
      const prev = three.byId.get(current.selected);
      current.selected = null;
      setMaterial(prev, colliderMaterial(prev.userData.colliderId, prev.userData.collider.layer));
    }
    current.selected = id;
    if (id === null) { $('selection').textContent = 'click a collider'; return; }
    setMaterial(three.byId.get(id), selectedMaterial);
    showSelection(id);
  }
  function showSelection(id) {
    const o = three.byId.get(id);
    if (!o) { $('selection').textContent = 'collider ' + id + ': not in the world at this tick'; return; }
    const c = o.userData.collider;
    const s = Object.assign({}, c.shape);
    if (s.positions) { s.triangles = s.indices.length / 3; delete s.positions; delete s.indices; }
    if (s.children) s.children = s.children.length + ' sub-shapes';
    $('selection').textContent = 'id ' + c.id + '\nlayer ' + c.layer + '\nshape ' + JSON.stringify(s) +
      '\nposition ' + c.p.map((v) => v.toFixed(3)).join(', ') + '\nrotation ' + c.q.map((v) => v.toFixed(4)).join(', ');
  }

  // --- Live updates and the tick slider --------------------------------------
  // Reads the session's event stream until it ends, the page leaves the
  // session or live is switched off; its first event redraws everything.
  async function startLive() {
    stopLive();
    const session = current;
    const ctrl = new AbortController();
    session.stream = ctrl;
    try {
      const res = await checked(await fetch('/api/sessions/' + encodeURIComponent(session.id) + '/stream',
        { headers: authHeaders(), cache: 'no-store', signal: ctrl.signal }));
      const reader = res.body.getReader();
      const decoder = new TextDecoder();
      let buffer = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += decoder.decode(value, { stream: true });
        let end;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const text = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          let name = 'message', data = '';
          for (const line of text.split('\n')) {
            if (line.startsWith('event: ')) name = line.slice(7);
            else if (line.startsWith('data: ')) data += line.slice(6);
          }
          if (session !== current || !session.live) return;
          if (name === 'world') {
            ++session.events;
            applyEvent(JSON.parse(data));
          } else if (name === 'end') {
            setStatus('stream ended: ' + JSON.parse(data).reason);
          }
        }
      }
    } catch (e) {
      if (e.name !== 'AbortError' && e.message !== 'auth') setStatus('stream: ' + e.message);
    }
  }
  function stopLive() {
    if (current && current.stream) {
      current.stream.abort();
      current.stream = null;
    }
  }
  $('live').addEventListener('change', () => {
    if (!current) return;
    current.live = $('live').checked;
    if (current.live) startLive();
    else {
      stopLive();
      refreshWorld(true).catch((e) => setStatus('error: ' + e.message));
    }
  });
  $('show-queries').addEventListener('change', () => {
    if (!current) return;
    if (current.live) drawQueries();
    else refreshWorld(true).catch((e) => setStatus('error: ' + e.message));
  });
  $('tick-slider').addEventListener('input', () => {
    if (!current) return;
    current.live = false;
    stopLive();
    $('live').checked = false;
    refreshWorld(true).catch((e) => setStatus('error: ' + e.message));
  });

  // --- Routes: #/ and #/sessions/ID ------------------------------------------
  async function route() {
    const m = /^#\/sessions\/(.+)$/.exec(location.hash);
    try {
      if (m) await showSession(decodeURIComponent(m[1]));
      else await showSessions();
    } catch (e) {
      if (e.message !== 'auth') setStatus('error: ' + e.message);
    }
  }
  window.addEventListener('hashchange', route);
  route();

  // For tests and the console: what is drawn, without reading pixels by hand.
  window.hitboxInspector = {
    drawnColliders: () => (three ? three.byId.size : 0),
    // Frames drawn and stream events applied so far (the page is alive, the stream works).
    frames: () => (three ? three.frames : 0),
    streamEvents: () => (current ? current.events : 0),
    watchesDrawn: () => (three ? three.watches.children.length : 0),
    insideLit: () => (current ? [...current.inside].filter((id) => three.byId.has(id)).length : 0),
    tick: () => (current && current.world ? current.world.tick : null),
    colliderPose: (id) => {
      const o = three && three.byId.get(id);
      return o ? { p: o.position.toArray(), q: o.quaternion.toArray() } : null;
    },
    // Where collider `id`'s centre is on the page, and whether a click there picks it.
    colliderOnScreen: (id) => {
      const o = three && three.byId.get(id);
      if (!o) return null;
      const v = o.position.clone().project(three.camera);
      const rect = three.renderer.domElement.getBoundingClientRect();
      const x = rect.left + (v.x + 1) / 2 * rect.width, y = rect.top + (1 - v.y) / 2 * rect.height;
      return { x, y, picks: pick(x, y) === id };
    },
    // Distinct colours and pixels unlike the background in the rendered frame.
    pixelStats: () => {
      const src = three.renderer.domElement;
      const c = document.createElement('canvas');
      c.width = src.width; c.height = src.height;
      const ctx = c.getContext('2d');
      ctx.drawImage(src, 0, 0);
      const d = ctx.getImageData(0, 0, c.width, c.height).data;
      const colours = new Set();
      let other = 0;
      for (let i = 0; i < d.length; i += 4) {
        colours.add((d[i] << 16) | (d[i + 1] << 8) | d[i + 2]);
        if (Math.abs(d[i] - 0x1d) + Math.abs(d[i + 1] - 0x20) + Math.abs(d[i + 2] - 0x25) > 24) ++other;
      }
      return { colours: colours.size, nonBackground: other, pixels: d.length / 4 };
    },
  };
})();
