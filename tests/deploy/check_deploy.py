#!/usr/bin/env python3
"""Static checks of docker/ (no Docker engine needed).

  python3 check_deploy.py --repo ROOT [--mini-yaml] CHECK...

Checks (each one a CTest test):
  dockerfile  docker/Dockerfile: every COPY source exists in the repo and is not
              excluded by the .dockerignore; every script a RUN step names exists
              and was copied into the stage before it runs; the build stage calls
              scripts/hitbox.sh (deps, then build of hitboxd and hitboxctl); the
              runtime stage runs as non-root, EXPOSEs the gRPC port, has a
              HEALTHCHECK running `hitboxctl health` on the port hitboxd listens
              on, and starts hitboxd; the HITBOX_* variables it sets are read by
              the programs.
  compose     docker/compose.yaml: build contexts and Dockerfiles exist, bind
              mounts exist, files the commands use exist in the mounts,
              depends_on names services.
  k8s         docker/k8s/*.yaml parse; workloads' selectors match their pod
              labels; hitboxd containers have gRPC liveness and readiness probes
              on a declared port; the pool's StatefulSet, headless Service and
              member list agree.
  (compose and k8s) persistence: the compose hitboxd and the pool's
              StatefulSet keep sessions in HITBOX_DATA_DIR on a writable
              volume (compose: a declared named volume; the StatefulSet: a
              volumeClaimTemplate); any HITBOX_DATA_DIR is on a writable mount
              and HITBOX_FSYNC is always, everysec or no.
  monitoring  metrics: docs/metrics.md lists exactly the metric names
              server/metrics.cc exports; docker/hitbox-dashboard.json parses and
              its queries use only those names and their labels, through the
              provisioned datasource; compose.yaml starts Prometheus and Grafana
              under the `monitoring` profile, Prometheus scrapes hitboxd's
              HITBOX_METRICS_LISTEN port, Grafana mounts the dashboard where its
              provider reads it; k8s pods annotated for scraping name a metrics
              port hitboxd listens on.
  yaml        the fallback YAML reader (mini_yaml.py) gives the same documents
              as PyYAML on every file above (skipped without PyYAML).
PyYAML is used when installed; --mini-yaml (or its absence) uses mini_yaml.py.
"""

import argparse
import fnmatch
import glob
import os
import re
import shlex
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mini_yaml  # noqa: E402

FAILURES = []


def fail(msg):
    FAILURES.append(msg)
    print("FAIL: " + msg)


def expect(cond, msg):
    if not cond:
        fail(msg)
    return cond


def load_yaml_all(path, use_mini):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    if not use_mini:
        try:
            import yaml  # type: ignore
            return list(d for d in yaml.safe_load_all(text) if d is not None)
        except ImportError:
            pass
    return mini_yaml.load_all(text)


# --- Dockerfile -------------------------------------------------------------

def dockerfile_instructions(path):
    """(line, INSTRUCTION, argument text) with continuations joined and comments dropped."""
    out, buf, start = [], "", 0
    with open(path, encoding="utf-8") as f:
        for number, raw in enumerate(f, start=1):
            line = raw.rstrip("\n")
            if not buf and (not line.strip() or line.lstrip().startswith("#")):
                continue
            if buf and line.lstrip().startswith("#"):
                continue
            if not buf:
                start = number
            if line.endswith("\\"):
                buf += line[:-1] + " "
                continue
            buf += line
            word, _, rest = buf.strip().partition(" ")
            out.append((start, word.upper(), rest.strip()))
            buf = ""
    return out


def dockerignore_patterns(repo, dockerfile):
    for candidate in (dockerfile + ".dockerignore", os.path.join(repo, ".dockerignore")):
        if os.path.exists(candidate):
            with open(candidate, encoding="utf-8") as f:
                return [l.strip().rstrip("/") for l in f
                        if l.strip() and not l.startswith("#")]
    return []


def ignored(path, patterns):
    parts = path.strip("/").split("/")
    for pat in patterns:
        for i in range(1, len(parts) + 1):
            if fnmatch.fnmatch("/".join(parts[:i]), pat):
                return True
    return False


def split_flags(args):
    words = shlex.split(args)
    flags = {}
    rest = []
    for w in words:
        if w.startswith("--") and not rest:
            k, _, v = w[2:].partition("=")
            flags[k] = v
        else:
            rest.append(w)
    return flags, rest


def exec_form(args):
    args = args.strip()
    if args.startswith("["):
        import json
        return json.loads(args)
    return shlex.split(args)


def program_sources(repo):
    """Text of the C++ sources of hitboxd and hitboxctl, to find the env vars they read."""
    texts = {}
    for name, folders in (("hitboxd", ["server"]), ("hitboxctl", ["client/ctl", "client/src"])):
        text = ""
        for folder in folders:
            for p in glob.glob(os.path.join(repo, folder, "**", "*.*"), recursive=True):
                if p.endswith((".cc", ".h")):
                    with open(p, encoding="utf-8", errors="replace") as f:
                        text += f.read()
        texts[name] = text
    return texts


def check_env_read(repo, program, names, where):
    text = program_sources(repo)[program]
    if not text:
        print(f"note: no {program} sources yet; {where} env vars not checked")
        return
    for name in names:
        expect('"' + name + '"' in text,
               f"{where}: {name} is set for {program} but its sources never read it")


def check_dockerfile(repo):
    dockerfile = os.path.join(repo, "docker", "Dockerfile")
    if not expect(os.path.exists(dockerfile), "docker/Dockerfile is missing"):
        return
    patterns = dockerignore_patterns(repo, dockerfile)
    instructions = dockerfile_instructions(dockerfile)
    args = {}
    stages = []  # dicts: name, base, copied (paths in the image), runs, ...
    for line, op, arg in instructions:
        where = f"docker/Dockerfile:{line}"
        if op == "ARG":
            k, _, v = arg.partition("=")
            if not stages:
                args[k] = v
            continue
        if op == "FROM":
            m = re.match(r"^(\S+)(?:\s+AS\s+(\S+))?$", arg, re.IGNORECASE)
            expect(m is not None, f"{where}: cannot read FROM {arg!r}")
            base = re.sub(r"\$\{(\w+)\}|\$(\w+)", lambda x: args.get(x.group(1) or x.group(2), ""),
                          m.group(1))
            stages.append({"name": m.group(2) or str(len(stages)), "base": base, "copied": [],
                           "runs": [], "workdir": "/", "env": {}, "line": line, "ops": []})
            continue
        if not expect(stages, f"{where}: {op} before FROM"):
            return
        st = stages[-1]
        st["ops"].append((line, op, arg))
        if op == "WORKDIR":
            st["workdir"] = os.path.join(st["workdir"], arg)
        elif op in ("COPY", "ADD"):
            expect(op == "COPY", f"{where}: use COPY, not ADD")
            flags, words = split_flags(arg)
            srcs, dest = words[:-1], words[-1]
            dest_abs = os.path.normpath(os.path.join(st["workdir"], dest))
            if "from" in flags:
                names = [s["name"] for s in stages[:-1]]
                expect(flags["from"] in names, f"{where}: COPY --from={flags['from']} names no earlier stage")
                for s in srcs:
                    expect(s.startswith("/src/build/bin/"),
                           f"{where}: {s} is not a program from the build stage's build/bin")
                    st.setdefault("programs", []).append(os.path.basename(s))
                continue
            for s in srcs:
                path = os.path.normpath(os.path.join(repo, s))
                expect(os.path.exists(path), f"{where}: COPY source {s} does not exist in the repo")
                if s not in (".", "./"):
                    expect(not ignored(s, patterns), f"{where}: COPY source {s} is excluded by .dockerignore")
                if s in (".", "./"):
                    st["copied"].append((dest_abs, "."))
                else:
                    target = dest_abs if len(srcs) == 1 and not dest.endswith("/") \
                        else os.path.join(dest_abs, os.path.basename(s))
                    st["copied"].append((target, s))
        elif op == "RUN":
            st["runs"].append((line, arg))
            # Every repo script a RUN names must exist and have been copied in.
            for word in re.findall(r"(?:^|[\s=\"'])((?:scripts|docker)/[\w./-]+)", arg):
                where_w = f"{where}: RUN uses {word}"
                expect(os.path.exists(os.path.join(repo, word)), f"{where_w}, which does not exist")
                in_image = os.path.normpath(os.path.join(st["workdir"], word))
                ok = any(dst == in_image or (src == "." and in_image.startswith(dst + "/"))
                         for dst, src in st["copied"])
                expect(ok, f"{where_w} before it is copied into the stage")
        elif op == "ENV":
            for k, v in re.findall(r"(\w+)=(\"[^\"]*\"|\S+)", arg):
                st["env"][k] = v.strip('"')
        elif op in ("USER", "EXPOSE", "HEALTHCHECK", "ENTRYPOINT", "CMD"):
            st[op] = arg

    if not expect(len(stages) >= 2, "Dockerfile: expected a multi-stage build (build + runtime)"):
        return
    build, runtime = stages[0], stages[-1]
    for st in stages:
        expect(st["base"] == "debian:bookworm-slim",
               f"Dockerfile:{st['line']}: stage {st['name']} is based on {st['base']!r}, "
               "not debian:bookworm-slim")

    runs = " ; ".join(a for _, a in build["runs"])
    deps_at = runs.find("scripts/hitbox.sh deps")
    build_at = runs.find("scripts/hitbox.sh build")
    expect(deps_at >= 0, "Dockerfile: build stage never runs `bash scripts/hitbox.sh deps`")
    expect(build_at >= 0, "Dockerfile: build stage never runs `bash scripts/hitbox.sh build`")
    expect(deps_at < build_at, "Dockerfile: `hitbox.sh deps` must come before the build")
    expect("apt-get" not in runs,
           "Dockerfile: the build stage installs packages itself; scripts/hitbox.sh is the one source")
    m = re.search(r"HITBOX_TARGETS=\"([^\"]+)\"", runs)
    built = set(m.group(1).split()) if m else {"hitboxd", "hitboxctl"}
    expect({"hitboxd", "hitboxctl"} <= built, "Dockerfile: build stage must build hitboxd and hitboxctl")
    for prog in runtime.get("programs", []):
        expect(prog in built, f"Dockerfile: runtime copies {prog}, which the build stage does not build")
    expect({"hitboxd", "hitboxctl"} <= set(runtime.get("programs", [])),
           "Dockerfile: runtime stage must contain hitboxd and hitboxctl")
    # scripts/hitbox.sh must understand the variables the Dockerfile passes.
    with open(os.path.join(repo, "scripts", "hitbox.sh"), encoding="utf-8") as f:
        script = f.read()
    for var in set(re.findall(r"\b(HITBOX_[A-Z_]+|BUILD_DIR|JOBS)=", runs)):
        expect(var in script, f"Dockerfile: passes {var} but scripts/hitbox.sh does not read it")

    user = runtime.get("USER", "").split(":")[0]
    expect(user not in ("", "root", "0"), "Dockerfile: runtime stage must run as a non-root USER")
    expose = runtime.get("EXPOSE", "")
    expect("50051" in expose.split(), "Dockerfile: runtime stage must EXPOSE 50051")
    hc = runtime.get("HEALTHCHECK", "")
    cmd = hc.partition("CMD")[2]
    expect("hitboxctl" in cmd and "health" in cmd, "Dockerfile: HEALTHCHECK must run `hitboxctl health`")
    entry = exec_form(runtime.get("ENTRYPOINT", "[]"))
    expect(entry[:1] == ["hitboxd"], "Dockerfile: ENTRYPOINT must start hitboxd")
    env = runtime["env"]
    port = env.get("HITBOX_LISTEN", "").rpartition(":")[2]
    expect(port in expose.split(), f"Dockerfile: HITBOX_LISTEN port {port!r} is not EXPOSEd")
    hc_port = env.get("HITBOX_ADDRESS", "localhost:50051").rpartition(":")[2]
    expect(hc_port == port, f"Dockerfile: the HEALTHCHECK dials port {hc_port} (HITBOX_ADDRESS) "
                            f"but hitboxd listens on {port} (HITBOX_LISTEN)")
    check_env_read(repo, "hitboxd", [k for k in env if k.startswith("HITBOX_") and k != "HITBOX_ADDRESS"],
                   "Dockerfile ENV")
    check_env_read(repo, "hitboxctl", [k for k in env if k == "HITBOX_ADDRESS"], "Dockerfile ENV")
    # The runtime stage installs only libraries: no -dev package, no compiler.
    with open(os.path.join(repo, "docker", "runtime-packages.txt"), encoding="utf-8") as f:
        pkgs = [l.strip() for l in f if l.strip() and not l.startswith("#")]
    for p in pkgs:
        expect(not p.endswith("-dev") and p not in ("build-essential", "cmake", "g++", "gcc"),
               f"runtime-packages.txt: {p} is a build package")


# --- compose ----------------------------------------------------------------

CREDENTIAL_VARS = ("HITBOX_ADMIN_TOKEN_FILE", "HITBOX_TLS_CLIENT_CA")


def check_credentials(env, mount_targets, where):
    """A hitboxd that other containers or pods reach needs credentials (else
    protected mode refuses them), must not be --insecure, and reads its admin
    token from a mounted volume (a Secret), not from the image."""
    expect(any(env.get(v) for v in CREDENTIAL_VARS),
           f"{where}: hitboxd has no credentials ({' or '.join(CREDENTIAL_VARS)}); "
           "clients on other hosts would be refused (protected mode)")
    insecure = str(env.get("HITBOX_INSECURE", "")).lower()
    expect(insecure in ("", "false", "0", "none"),
           f"{where}: HITBOX_INSECURE is set; use an admin token instead")
    token_file = env.get("HITBOX_ADMIN_TOKEN_FILE")
    if token_file:
        expect(any(str(token_file).startswith(t.rstrip("/") + "/") for t in mount_targets),
               f"{where}: HITBOX_ADMIN_TOKEN_FILE {token_file} is not on a mounted secret volume")


def check_data_dir(env, mounts, where, required, volume_ok=lambda name: True):
    """hitboxd's --data-dir must be on a writable volume (the image's own
    filesystem is lost with the container, or read-only). `mounts` maps
    mount paths to (volume name, read_only)."""
    data_dir = str(env.get("HITBOX_DATA_DIR") or "")
    fsync = env.get("HITBOX_FSYNC")
    expect(fsync is None or str(fsync) in ("always", "everysec", "no"),
           f"{where}: HITBOX_FSYNC {fsync!r} is not always, everysec or no")
    if not data_dir:
        expect(not required, f"{where}: no HITBOX_DATA_DIR: sessions are lost on every restart")
        return
    under = [(path, vol) for path, vol in mounts.items()
             if data_dir == path.rstrip("/") or data_dir.startswith(path.rstrip("/") + "/")]
    if not expect(under, f"{where}: HITBOX_DATA_DIR {data_dir} is not on a mounted volume"):
        return
    path, (volume, read_only) = max(under, key=lambda pv: len(pv[0]))
    expect(not read_only, f"{where}: HITBOX_DATA_DIR {data_dir} is on read-only mount {path}")
    expect(volume_ok(volume), f"{where}: HITBOX_DATA_DIR {data_dir} is on {volume!r}, "
                              "which is not a persistent volume here")


def check_compose(repo, use_mini):
    path = os.path.join(repo, "docker", "compose.yaml")
    if not expect(os.path.exists(path), "docker/compose.yaml is missing"):
        return
    base = os.path.dirname(path)
    docs = load_yaml_all(path, use_mini)
    expect(len(docs) == 1, "compose.yaml: expected one document")
    services = docs[0].get("services", {})
    expect("hitboxd" in services, "compose.yaml: no hitboxd service")
    images = {}
    for name, svc in services.items():
        where = f"compose.yaml: service {name}"
        build = svc.get("build")
        if build is not None:
            if isinstance(build, str):
                build = {"context": build}
            ctx = os.path.normpath(os.path.join(base, build.get("context", ".")))
            expect(os.path.isdir(ctx), f"{where}: build context {build.get('context')} does not exist")
            dockerfile = os.path.join(ctx, build.get("dockerfile", "Dockerfile"))
            expect(os.path.isfile(dockerfile), f"{where}: Dockerfile {dockerfile} does not exist")
        if "image" in svc:
            images.setdefault(svc["image"], []).append(name)
        own_image = str(svc.get("image", "")).startswith("hitbox")
        expect(not own_image or build is not None or any(
            "build" in services[o] for o in images.get(svc.get("image"), []) if o != name),
            f"{where}: image {svc.get('image')} is neither built here nor by another service")
        mounts = {}
        for vol in svc.get("volumes", []) or []:
            src, _, rest = (vol if isinstance(vol, str) else
                            f"{vol.get('source')}:{vol.get('target')}").partition(":")
            target = rest.split(":")[0]
            if src.startswith((".", "/")):
                host = os.path.normpath(os.path.join(base, src))
                expect(os.path.exists(host), f"{where}: bind mount source {src} does not exist")
                mounts[target] = host
        deps = svc.get("depends_on", {}) or {}
        for dep in (deps if isinstance(deps, (list, dict)) else []):
            expect(dep in services, f"{where}: depends_on {dep}, which is not a service")
        command = svc.get("command", [])
        text = " ".join(command) if isinstance(command, list) else str(command or "")
        for target, host in mounts.items():
            for used in re.findall(re.escape(target.rstrip("/")) + r"/[\w./-]+", text):
                rel = used[len(target.rstrip("/")) + 1:]
                expect(os.path.exists(os.path.join(host, rel)),
                       f"{where}: command uses {used}, but {os.path.join(host, rel)} does not exist")
        env = svc.get("environment") or {}
        targets = [v.split(":")[1] if isinstance(v, str) and ":" in v else
                   str(v.get("target", "")) if isinstance(v, dict) else ""
                   for v in svc.get("volumes", []) or []]
        if name == "hitboxd":
            check_credentials(env, targets, f"compose.yaml service {name}")
            named = docs[0].get("volumes") or {}
            vol_mounts = {}
            for v in svc.get("volumes", []) or []:
                if isinstance(v, str):
                    parts = v.split(":")
                    if len(parts) >= 2:
                        vol_mounts[parts[1]] = (parts[0], len(parts) > 2 and "ro" in parts[2].split(","))
                elif isinstance(v, dict):
                    vol_mounts[str(v.get("target", ""))] = (str(v.get("source", "")),
                                                            bool(v.get("read_only")))
            check_data_dir(env, vol_mounts, f"compose.yaml service {name}", required=True,
                           volume_ok=lambda vol: vol in named or vol.startswith((".", "/")))
        elif "HITBOX_ADDRESS" in env and env.get("HITBOX_ADDRESS", "").startswith("hitboxd"):
            expect("HITBOX_TOKEN" in env or "HITBOX_TOKEN" in text or "--token" in text,
                   f"compose.yaml service {name}: talks to hitboxd but sends no token "
                   "(HITBOX_TOKEN / --token)")
        for env_name in env:
            if name == "hitboxd":
                check_env_read(repo, "hitboxd", [env_name], f"compose.yaml {name}")
            elif env_name == "HITBOX_ADDRESS":
                check_env_read(repo, "hitboxctl", [env_name], f"compose.yaml {name}")


# --- Kubernetes -------------------------------------------------------------

def containers_of(doc):
    """The long-running containers of a workload: its containers plus native
    sidecars (init containers with restartPolicy Always)."""
    spec = doc.get("spec", {}).get("template", {}).get("spec", {})
    sidecars = [c for c in spec.get("initContainers", []) or []
                if c.get("restartPolicy") == "Always"]
    return (spec.get("containers", []) or []) + sidecars


def check_k8s(repo, use_mini):
    files = sorted(glob.glob(os.path.join(repo, "docker", "k8s", "*.yaml")))
    expect(len(files) >= 2, "docker/k8s: expected the sidecar and the pool manifests")
    for path in files:
        name = os.path.relpath(path, repo)
        try:
            docs = load_yaml_all(path, use_mini)
        except Exception as e:  # noqa: BLE001 - any parse error is a failure
            fail(f"{name}: does not parse: {e}")
            continue
        expect(docs, f"{name}: no documents")
        services = {d["metadata"]["name"]: d for d in docs
                    if isinstance(d, dict) and d.get("kind") == "Service"}
        by_kind = {}
        for i, doc in enumerate(docs):
            where = f"{name} document {i + 1}"
            if not expect(isinstance(doc, dict), f"{where}: not a mapping"):
                continue
            for key in ("apiVersion", "kind", "metadata"):
                expect(key in doc, f"{where}: missing {key}")
            expect(bool(doc.get("metadata", {}).get("name")), f"{where}: missing metadata.name")
            kind = doc.get("kind")
            by_kind.setdefault(kind, []).append(doc)
            if kind in ("Deployment", "StatefulSet"):
                where = f"{name} {kind} {doc['metadata']['name']}"
                selector = doc["spec"].get("selector", {}).get("matchLabels", {})
                labels = doc["spec"]["template"]["metadata"].get("labels", {})
                expect(selector and all(labels.get(k) == v for k, v in selector.items()),
                       f"{where}: selector {selector} does not match the pod labels {labels}")
                hitboxd = [c for c in containers_of(doc) if "hitbox" in str(c.get("image", ""))]
                expect(hitboxd, f"{where}: no hitboxd container")
                for c in containers_of(doc):
                    expect(bool(c.get("image")), f"{where}: container {c.get('name')} has no image")
                for c in hitboxd:
                    ports = {p.get("containerPort") for p in c.get("ports", [])}
                    names = {p.get("name") for p in c.get("ports", [])}
                    for probe in ("livenessProbe", "readinessProbe"):
                        grpc = (c.get(probe) or {}).get("grpc")
                        if expect(grpc is not None, f"{where}: {c['name']} has no gRPC {probe}"):
                            expect(grpc.get("port") in ports | names,
                                   f"{where}: {probe} port {grpc.get('port')} is not a container port")
                    env = {e["name"]: e.get("value") for e in c.get("env", [])}
                    pod_volumes = {v.get("name"): v for v in
                                   doc["spec"]["template"]["spec"].get("volumes", []) or []}
                    secret_mounts = [m.get("mountPath", "") for m in c.get("volumeMounts", []) or []
                                     if "secret" in pod_volumes.get(m.get("name"), {})]
                    check_credentials(env, secret_mounts, f"{where} container {c.get('name')}")
                    listen = str(env.get("HITBOX_LISTEN", "")).rpartition(":")[2]
                    expect(listen.isdigit() and int(listen) in ports,
                           f"{where}: HITBOX_LISTEN {env.get('HITBOX_LISTEN')} is not a container port")
                    expect(not listen or not env.get("HITBOX_LISTEN", "").startswith("127."),
                           f"{where}: hitboxd must listen on the pod IP for the kubelet's gRPC probes")
                    check_env_read(repo, "hitboxd", [k for k in env if k.startswith("HITBOX_")], where)
                    claims = {t.get("metadata", {}).get("name") for t in
                              doc["spec"].get("volumeClaimTemplates", []) or []}
                    mounts = {m.get("mountPath", ""): (m.get("name"), bool(m.get("readOnly")))
                              for m in c.get("volumeMounts", []) or []}
                    if kind == "StatefulSet":
                        # The pool: each pod's sessions on its own claim.
                        check_data_dir(env, mounts, f"{where} container {c.get('name')}",
                                       required=True, volume_ok=lambda vol: vol in claims)
                    else:
                        check_data_dir(env, mounts, f"{where} container {c.get('name')}",
                                       required=False,
                                       volume_ok=lambda vol: vol in pod_volumes or vol in claims)
                pod_spec = doc["spec"]["template"]["spec"]
                expect(pod_spec.get("automountServiceAccountToken") is False,
                       f"{where}: set automountServiceAccountToken: false (no API access needed)")
                for c in pod_spec.get("initContainers", []) or []:
                    if "hitbox" in str(c.get("image", "")):
                        expect(c.get("restartPolicy") == "Always",
                               f"{where}: init container {c.get('name')} runs hitboxd but is not "
                               "a native sidecar (restartPolicy: Always)")
                for c in hitboxd:
                    res = c.get("resources", {})
                    req = (res.get("requests") or {}).get("memory")
                    lim = (res.get("limits") or {}).get("memory")
                    expect(lim is not None and req == lim,
                           f"{where}: {c.get('name')} memory request {req} != limit {lim}")
                policies = [d for d in docs if isinstance(d, dict) and d.get("kind") == "NetworkPolicy"]
                pod_labels = doc["spec"]["template"]["metadata"].get("labels", {})
                expect(any(all(pod_labels.get(k) == v for k, v in
                               (pol.get("spec", {}).get("podSelector", {}).get("matchLabels") or {}).items())
                           for pol in policies),
                       f"{where}: no NetworkPolicy selects its pods")
                pod_sc = doc["spec"]["template"]["spec"].get("securityContext", {})
                for c in hitboxd:
                    sc = c.get("securityContext", {})
                    expect(sc.get("runAsNonRoot") or pod_sc.get("runAsNonRoot"),
                           f"{where}: {c['name']} must run as non-root (runAsNonRoot)")
                    expect(sc.get("runAsUser", pod_sc.get("runAsUser", 1)) != 0,
                           f"{where}: {c['name']} runs as uid 0")
            if kind == "StatefulSet":
                svc_name = doc["spec"].get("serviceName")
                svc = services.get(svc_name)
                where = f"{name} StatefulSet {doc['metadata']['name']}"
                if expect(svc is not None, f"{where}: serviceName {svc_name} is not a Service in the file"):
                    expect(svc["spec"].get("clusterIP") == "None", f"{where}: Service {svc_name} is not headless")
                    labels = doc["spec"]["template"]["metadata"]["labels"]
                    expect(all(labels.get(k) == v for k, v in svc["spec"]["selector"].items()),
                           f"{where}: Service {svc_name} does not select the pods")
        for cm in by_kind.get("ConfigMap", []):
            pool = cm.get("data", {}).get("HITBOX_POOL")
            sts = by_kind.get("StatefulSet", [])
            if pool is None or not sts:
                continue
            st = sts[0]
            replicas = st["spec"].get("replicas", 1)
            want = [f"{st['metadata']['name']}-{i}.{st['spec']['serviceName']}:50051"
                    for i in range(replicas)]
            got = [a.strip() for a in pool.split(",")]
            expect(got == want, f"{name}: HITBOX_POOL {got} does not list the {replicas} pods {want}")


def check_yaml_reader(repo):
    try:
        import yaml  # type: ignore
    except ImportError:
        print("note: PyYAML not installed; mini_yaml cross-check skipped")
        return
    files = sorted(glob.glob(os.path.join(repo, "docker", "**", "*.yaml"), recursive=True) +
                   glob.glob(os.path.join(repo, "docker", "**", "*.yml"), recursive=True))
    expect(files, "no YAML files under docker/")
    for path in files:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        want = [d for d in yaml.safe_load_all(text) if d is not None]
        got = mini_yaml.load_all(text)
        expect(got == want, f"{os.path.relpath(path, repo)}: mini_yaml reads {got!r}, PyYAML {want!r}")


# --- Metrics and monitoring --------------------------------------------------

HISTOGRAM_SUFFIXES = ("_bucket", "_sum", "_count")


def documented_metrics(repo):
    """{name: (type, set of labels)} from the table of docs/metrics.md."""
    out = {}
    path = os.path.join(repo, "docs", "metrics.md")
    if not expect(os.path.exists(path), "docs/metrics.md is missing"):
        return out
    with open(path, encoding="utf-8") as f:
        for line in f:
            m = re.match(r"^\|\s*`(hitbox_\w+)`\s*\|\s*(\w+)\s*\|([^|]*)\|", line)
            if m:
                labels = set(re.findall(r"`(\w+)`", m.group(3)))
                expect(m.group(2) in ("counter", "gauge", "histogram"),
                       f"docs/metrics.md: {m.group(1)} has type {m.group(2)}")
                expect(m.group(1) not in out, f"docs/metrics.md: {m.group(1)} listed twice")
                out[m.group(1)] = (m.group(2), labels)
    expect(out, "docs/metrics.md: no metric table rows")
    return out


def exported_metrics(repo):
    """Metric family names that server/metrics.cc writes (its string literals)."""
    with open(os.path.join(repo, "server", "metrics.cc"), encoding="utf-8") as f:
        names = set(re.findall(r'"(hitbox_\w+)"', f.read()))
    return {n for n in names
            if not (n.endswith(HISTOGRAM_SUFFIXES) and n.rsplit("_", 1)[0] in names)}


def family_of(name, docs):
    """The documented family of a series name (histogram suffixes stripped)."""
    for suffix in HISTOGRAM_SUFFIXES:
        base = name[: -len(suffix)]
        if name.endswith(suffix) and docs.get(base, ("",))[0] == "histogram":
            return base
    return name


def check_monitoring(repo, use_mini):
    docs = documented_metrics(repo)
    exported = exported_metrics(repo)
    for name in sorted(exported - set(docs)):
        fail(f"server/metrics.cc exports {name}, which docs/metrics.md does not list")
    for name in sorted(set(docs) - exported):
        fail(f"docs/metrics.md lists {name}, which server/metrics.cc does not export")

    # The dashboard: parses, queries only documented names and their labels.
    path = os.path.join(repo, "docker", "hitbox-dashboard.json")
    import json
    try:
        with open(path, encoding="utf-8") as f:
            dashboard = json.load(f)
    except (OSError, ValueError) as e:
        fail(f"docker/hitbox-dashboard.json: {e}")
        return
    panels = dashboard.get("panels", [])
    expect(panels and dashboard.get("uid") and dashboard.get("title"),
           "hitbox-dashboard.json: needs uid, title and panels")
    datasource_uids = set()
    used = set()
    for panel in panels:
        where = f"hitbox-dashboard.json panel {panel.get('title')!r}"
        targets = panel.get("targets", [])
        expect(targets, f"{where}: no queries")
        for t in targets + [panel]:
            ds = t.get("datasource")
            if isinstance(ds, dict):
                datasource_uids.add(ds.get("uid"))
        for t in targets:
            expr = t.get("expr", "")
            names = re.findall(r"\b(hitbox_\w+)", expr)
            expect(names, f"{where}: query {expr!r} uses no hitbox_ metric")
            labels = set()
            for name in names:
                family = family_of(name, docs)
                used.add(family)
                if expect(family in docs, f"{where}: {name} is not a documented metric"):
                    labels |= docs[family][1] | ({"le"} if name.endswith("_bucket") else set())
            for group in re.findall(r"\b(?:by|without)\s*\(([^)]*)\)", expr):
                for label in filter(None, (x.strip() for x in group.split(","))):
                    expect(label in labels, f"{where}: {expr!r} groups by {label}, "
                           f"not a label of {sorted(set(names))}")
            for label in re.findall(r"[{,]\s*(\w+)\s*(?:=|!=|=~|!~)", expr):
                expect(label in labels, f"{where}: {expr!r} filters on {label}, "
                       f"not a label of {sorted(set(names))}")
    for name in sorted(set(docs) - used):
        fail(f"hitbox-dashboard.json: no panel shows {name}")

    # Grafana provisioning: the datasource the dashboard uses, the dashboard directory.
    prov = {}
    for sub in ("datasources", "dashboards"):
        for p in glob.glob(os.path.join(repo, "docker", "grafana", sub, "*.yaml")):
            prov.setdefault(sub, []).extend(load_yaml_all(p, use_mini))
    sources = [d for doc in prov.get("datasources", []) for d in doc.get("datasources", [])]
    expect({s.get("uid") for s in sources} >= datasource_uids,
           f"grafana datasources {[s.get('uid') for s in sources]} do not provide the "
           f"dashboard's {sorted(datasource_uids)}")
    dash_dirs = [p.get("options", {}).get("path") for doc in prov.get("dashboards", [])
                 for p in doc.get("providers", [])]
    expect(dash_dirs, "docker/grafana/dashboards: no dashboard provider")

    # compose: profile, scrape target, mounts.
    compose = load_yaml_all(os.path.join(repo, "docker", "compose.yaml"), use_mini)[0]
    expect("name" not in compose, "compose.yaml: a top-level name: needs Compose v2 "
           "(Debian's docker-compose 1.29 rejects it)")
    services = compose.get("services", {})
    hitboxd_env = services.get("hitboxd", {}).get("environment", {}) or {}
    metrics_listen = str(hitboxd_env.get("HITBOX_METRICS_LISTEN", ""))
    expect(metrics_listen.rpartition(":")[2].isdigit(),
           "compose.yaml: hitboxd sets no HITBOX_METRICS_LISTEN host:port")
    metrics_port = metrics_listen.rpartition(":")[2]

    def mounts(svc):
        out = {}
        for vol in services.get(svc, {}).get("volumes", []) or []:
            src, _, rest = vol.partition(":")
            out[rest.split(":")[0]] = os.path.normpath(os.path.join(repo, "docker", src))
        return out

    for svc in ("prometheus", "grafana"):
        if expect(svc in services, f"compose.yaml: no {svc} service"):
            expect("monitoring" in (services[svc].get("profiles") or []),
                   f"compose.yaml: {svc} is not in the monitoring profile")
    prom_config = mounts("prometheus").get("/etc/prometheus/prometheus.yml")
    if expect(prom_config and os.path.isfile(prom_config),
              "compose.yaml: prometheus does not mount a config at /etc/prometheus/prometheus.yml"):
        config = load_yaml_all(prom_config, use_mini)[0]
        targets = [t for job in config.get("scrape_configs", [])
                   for sc in job.get("static_configs", []) for t in sc.get("targets", [])]
        expect(f"hitboxd:{metrics_port}" in targets,
               f"prometheus.yml: scrapes {targets}, not hitboxd:{metrics_port}")
    for src in sources:
        host = re.sub(r"^\w+://", "", str(src.get("url", ""))).split(":")[0]
        expect(host in services, f"grafana datasource url {src.get('url')} names no compose service")
    grafana = mounts("grafana")
    for sub, target in (("datasources", "/etc/grafana/provisioning/datasources"),
                        ("dashboards", "/etc/grafana/provisioning/dashboards")):
        expect(grafana.get(target) == os.path.join(repo, "docker", "grafana", sub),
               f"compose.yaml: grafana does not mount docker/grafana/{sub} at {target}")
    expect(any(host == path and os.path.dirname(target) in dash_dirs
               for target, host in grafana.items()),
           "compose.yaml: grafana does not mount docker/hitbox-dashboard.json into "
           f"a provider's directory {dash_dirs}")

    # Kubernetes: pods annotated for scraping name a metrics port hitboxd listens on.
    for kpath in sorted(glob.glob(os.path.join(repo, "docker", "k8s", "*.yaml"))):
        for doc in load_yaml_all(kpath, use_mini):
            if doc.get("kind") not in ("Deployment", "StatefulSet"):
                continue
            where = f"{os.path.relpath(kpath, repo)} {doc['kind']} {doc['metadata']['name']}"
            notes = doc["spec"]["template"]["metadata"].get("annotations", {}) or {}
            if not expect(notes.get("prometheus.io/scrape") == "true",
                          f"{where}: pod not annotated prometheus.io/scrape: \"true\""):
                continue
            port = str(notes.get("prometheus.io/port", ""))
            hitboxd = [c for c in containers_of(doc) if "hitbox" in str(c.get("image", ""))]
            ok = False
            for c in hitboxd:
                env = {e["name"]: str(e.get("value")) for e in c.get("env", [])}
                ports = {str(p.get("containerPort")) for p in c.get("ports", [])}
                ok |= env.get("HITBOX_METRICS_LISTEN", "").rpartition(":")[2] == port and port in ports
            expect(ok, f"{where}: prometheus.io/port {port!r} is not a hitboxd container port "
                   "that HITBOX_METRICS_LISTEN listens on")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repo", required=True)
    ap.add_argument("--mini-yaml", action="store_true", help="never use PyYAML")
    ap.add_argument("checks", nargs="+", choices=["dockerfile", "compose", "k8s", "monitoring", "yaml"])
    a = ap.parse_args()
    repo = os.path.abspath(a.repo)
    for check in a.checks:
        if check == "dockerfile":
            check_dockerfile(repo)
        elif check == "compose":
            check_compose(repo, a.mini_yaml)
        elif check == "k8s":
            check_k8s(repo, a.mini_yaml)
        elif check == "monitoring":
            check_monitoring(repo, a.mini_yaml)
        elif check == "yaml":
            check_yaml_reader(repo)
    if FAILURES:
        print(f"{len(FAILURES)} problem(s)")
        return 1
    print("ok: " + ", ".join(a.checks))
    return 0


if __name__ == "__main__":
    sys.exit(main())
