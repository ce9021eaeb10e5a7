"""GPU readiness facts of an environment, with no GPU: ``python ready.py --spec JSON`` prints JSON.

Standard library only; mounted read-only into an image (or run on the host against ``--site``
directories). For each framework found (torch, paddle) it reports the CUDA it was built for, the
shared libraries it links (``DT_NEEDED``, walked with each object's own run path, the image's
``LD_LIBRARY_PATH``, its loader cache and default directories) and the libraries it opens at run
time (the host's ``--spec`` names them per CUDA major), the GPU code every library carries, and the
versions a child process actually loads (``/proc/self/maps``; ``cudaRuntimeGetVersion``,
``cudnnGetVersion``, ``cublasGetProperty``, ``ncclGetVersion``: none needs a device). Verdicts are
the host's: this only reports. Problems (a truncated or non-ELF file, a loop) are findings naming
the file, never a traceback.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import subprocess
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True

import elfscan  # noqa: E402
import packages  # noqa: E402
import sandbox  # noqa: E402

KIND = "envkit-gpu-readiness"
SCHEMA = 1
MAX_LIBRARIES = 2000
LOAD_TIMEOUT = 120
DEFAULT_DIRS = (
    "/lib/x86_64-linux-gnu",
    "/usr/lib/x86_64-linux-gnu",
    "/lib64",
    "/usr/lib64",
    "/lib",
    "/usr/lib",
)
# Versions read in the child, by library key: (symbol, how it is called).
VERSION_CALLS = {
    "cudart": ("cudaRuntimeGetVersion", "int_out"),
    "cudnn": ("cudnnGetVersion", "size_t"),
    "cublas": ("cublasGetProperty", "property"),
    "cublasLt": ("cublasLtGetVersion", "size_t"),
    "nccl": ("ncclGetVersion", "int_out"),
    "cufft": ("cufftGetVersion", "int_out"),
    "curand": ("curandGetVersion", "int_out"),
}
LIB_KEY = re.compile(r"lib(cudart|cudnn|cublasLt|cublas|nccl|cufft|curand)\.so")


def _read_text(path: str, limit: int = 1 << 20) -> str:
    try:
        with open(path, "rb") as fh:
            return fh.read(limit).decode("utf-8", "replace")
    except OSError:
        return ""


def _assigned(text: str, name: str) -> str | None:
    """``name = 'value'`` (or ``name: Optional[str] = 'value'``) in a version module; None/False as None."""
    m = re.search(r"^" + re.escape(name) + r"\s*(?::[^=\n]*)?=\s*['\"]?([^'\"\n]*)['\"]?\s*$", text, re.M)
    if not m or m.group(1).strip() in ("None", "False", ""):
        return None
    return m.group(1).strip()


def _dist_version(names: tuple[str, ...], site: str) -> tuple[str | None, str | None]:
    for name in names:
        pattern = os.path.join(site, name.replace("-", "_") + "-*.dist-info")
        for info in sorted(glob.glob(pattern)):
            m = re.match(r".*-([^-]+)\.dist-info$", info)
            if m:
                return name, m.group(1)
    return None, None


def find_frameworks(sites: list[str]) -> dict[str, dict[str, object]]:
    """torch and paddle in these site directories: version, CUDA build, the libraries to start from."""
    found: dict[str, dict[str, object]] = {}
    for site in sites:
        torch_dir = os.path.join(site, "torch")
        if "torch" not in found and os.path.isdir(os.path.join(torch_dir, "lib")):
            text = _read_text(os.path.join(torch_dir, "version.py"))
            dist, version = _dist_version(("torch",), site)
            found["torch"] = {
                "dir": torch_dir,
                "distribution": dist,
                "version": _assigned(text, "__version__") or version,
                "cuda": _assigned(text, "cuda"),
                "cudnn": None,
                # the extension module first: the loader walks breadth first from what `import torch` opens
                "roots": sorted(glob.glob(os.path.join(torch_dir, "_C*.so")))
                + sorted(glob.glob(os.path.join(torch_dir, "lib", "lib*.so*"))),
                "dynload_from": os.path.join(torch_dir, "lib", "libtorch_cuda.so"),
            }
        paddle_dir = os.path.join(site, "paddle")
        if "paddle" not in found and os.path.isdir(os.path.join(paddle_dir, "libs")):
            text = _read_text(os.path.join(paddle_dir, "version", "__init__.py"))
            dist, version = _dist_version(("paddlepaddle-gpu", "paddlepaddle"), site)
            core = [os.path.join(paddle_dir, d, "libpaddle.so") for d in ("base", "fluid")]
            found["paddle"] = {
                "dir": paddle_dir,
                "distribution": dist,
                "version": _assigned(text, "full_version") or version,
                "cuda": _assigned(text, "cuda_version"),
                "cudnn": _assigned(text, "cudnn_version"),
                "roots": [p for p in core if os.path.isfile(p)]
                + sorted(glob.glob(os.path.join(paddle_dir, "libs", "lib*.so*"))),
                "dynload_from": os.path.join(paddle_dir, "libs", "libphi.so"),
            }
    return found


class Loader:
    """Resolves sonames the way the dynamic loader does, from inside this environment."""

    def __init__(self) -> None:
        self.ld_library_path = [p for p in os.environ.get("LD_LIBRARY_PATH", "").split(":") if p]
        self.ld_cache = self._cache()
        self.conf_dirs = self._conf_dirs("/etc/ld.so.conf", 0)

    @staticmethod
    def _cache() -> dict[str, str]:
        for exe in ("/sbin/ldconfig", "/usr/sbin/ldconfig", "ldconfig"):
            try:
                out = subprocess.run(
                    [exe, "-p"], capture_output=True, text=True, timeout=30, check=False
                ).stdout
            except (OSError, subprocess.SubprocessError):
                continue
            cache: dict[str, str] = {}
            for line in out.splitlines():
                m = re.match(r"\s+(\S+) \(([^)]*)\) => (\S+)", line)
                if m and ("x86-64" in m.group(2) or "64bit" in m.group(2) or "," not in m.group(2)):
                    cache.setdefault(m.group(1), m.group(3))
            return cache
        return {}

    def _conf_dirs(self, path: str, depth: int) -> list[str]:
        dirs: list[str] = []
        if depth > 4:
            return dirs
        for line in _read_text(path, 1 << 16).splitlines():
            line = line.split("#", 1)[0].strip()
            if line.startswith("include "):
                for inc in sorted(glob.glob(line.split(None, 1)[1])):
                    dirs.extend(self._conf_dirs(inc, depth + 1))
            elif line.startswith("/"):
                dirs.append(line)
        return dirs

    def search_dirs(self, origin: str, info: dict[str, object]) -> list[str]:
        def expand(paths: list[str]) -> list[str]:
            return [p.replace("$ORIGIN", origin).replace("${ORIGIN}", origin) for p in paths]

        rpath = expand(info.get("rpath") or []) if not info.get("runpath") else []
        return rpath + self.ld_library_path + expand(info.get("runpath") or [])

    def resolve(self, name: str, origin: str, info: dict[str, object]) -> str | None:
        if "/" in name:
            return name if os.path.isfile(name) else None
        for d in self.search_dirs(origin, info):
            candidate = os.path.join(d, name)
            if os.path.isfile(candidate):
                return os.path.normpath(candidate)
        if name in self.ld_cache and os.path.isfile(self.ld_cache[name]):
            return self.ld_cache[name]
        for d in self.conf_dirs + list(DEFAULT_DIRS):
            candidate = os.path.join(d, name)
            if os.path.isfile(candidate):
                return candidate
        return None


def _key(path: str) -> str:
    try:
        return os.path.realpath(path)
    except (OSError, ValueError):
        return path


def walk(
    roots: list[str], loader: Loader, host_libs: list[str], libraries: dict[str, dict[str, object]]
) -> list[dict[str, object]]:
    """Scan roots and everything they need; return the links (from, name, to) with unresolved ones.

    As the loader does, a needed name that is the soname of an object already loaded (walked
    before it, breadth first) is that object, wherever the requester's own paths point.
    """
    links: list[dict[str, object]] = []
    seen: set[str] = set()
    loaded: dict[str, str] = {}
    for root in roots:  # each root's closure in turn, breadth first, as one process loads them
        queue = [root]
        while queue and len(seen) < MAX_LIBRARIES:
            path = queue.pop(0)
            key = _key(path)
            if key in seen:
                continue
            seen.add(key)
            info = libraries.get(path) or elfscan.scan(path)
            info["path"] = path
            libraries[path] = info
            loaded.setdefault(info.get("soname") or os.path.basename(path), path)
            origin = os.path.dirname(path)
            for name in info["needed"]:
                target = loaded.get(name) or loader.resolve(name, origin, info)
                links.append({"from": path, "name": name, "to": target, "host": name in host_libs})
                if target is not None and name not in host_libs:
                    loaded.setdefault(name, target)
                    queue.append(target)
    return links


def dynload(
    fw: dict[str, object], table: dict[str, object], loader: Loader, libraries: dict[str, dict[str, object]]
) -> list[dict[str, object]]:
    """The libraries ``fw`` opens at run time (dlopen from its core library), resolved here."""
    cuda = fw.get("cuda")
    if not cuda:
        return []
    rows = table.get(cuda.split(".")[0], [])
    requester = fw["dynload_from"]
    req_info = libraries.get(requester) or (elfscan.scan(requester) if os.path.isfile(requester) else {})
    out = []
    for row in rows:
        names = [n.replace("{cudnn_major}", (fw.get("cudnn") or "").split(".")[0]) for n in row["names"]]
        to = None
        used = None
        for name in names:
            to = loader.resolve(name, os.path.dirname(requester), req_info)
            if to:
                used = name
                break
        soname = None
        if to:
            info = libraries.get(to) or elfscan.scan(to)
            info["path"] = to
            libraries.setdefault(to, info)
            soname = info.get("soname") or os.path.basename(to)
        out.append({"lib": row["lib"], "names": names, "opened_as": used, "to": to, "soname": soname})
    return out


def cuda_present(sites: list[str], loader: Loader) -> list[str]:
    """CUDA runtime libraries this environment has (NVIDIA's wheels, /usr/local/cuda, the loader cache)."""
    pats = [os.path.join(s, "nvidia", "*", "lib", "libcudart.so*") for s in sites]
    pats += [os.path.join(s, "nvidia", "*", "lib", "libcublas.so*") for s in sites]
    pats += ["/usr/local/cuda*/lib64/libcudart.so*", "/usr/local/cuda*/targets/*/lib/libcudart.so*"]
    found = {p for pat in pats for p in glob.glob(pat)}
    found |= {p for n, p in loader.ld_cache.items() if n.startswith(("libcudart.so", "libcublas.so"))}
    return sorted(found)


def child_load(pairs: list[tuple[str, str]]) -> dict[str, object]:
    """In this (child) process: open each library, call its version function, read the maps."""
    import ctypes

    versions: dict[str, object] = {}
    errors: dict[str, str] = {}
    for key, path in pairs:
        try:
            lib = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
        except OSError as e:
            errors[key] = str(e)
            continue
        call = VERSION_CALLS.get(key)
        if call is None:
            continue
        symbol, how = call
        try:
            fn = getattr(lib, symbol)
        except AttributeError:
            errors[key] = f"{symbol} not exported by {path}"
            continue
        if how == "size_t":
            fn.restype = ctypes.c_size_t
            versions[key] = int(fn())
        elif how == "int_out":
            value = ctypes.c_int(0)
            status = fn(ctypes.byref(value))
            versions[key] = value.value if status == 0 else None
            if status != 0:
                errors[key] = f"{symbol} returned {status}"
        else:
            parts = []
            for prop in (0, 1, 2):  # MAJOR_VERSION, MINOR_VERSION, PATCH_LEVEL
                value = ctypes.c_int(0)
                fn(prop, ctypes.byref(value))
                parts.append(value.value)
            versions[key] = ".".join(str(p) for p in parts)
    maps = sorted(
        {
            line.split()[-1]
            for line in _read_text("/proc/self/maps", 64 << 20).splitlines()
            if len(line.split()) >= 6 and ".so" in line.split()[-1]
        }
    )
    return {"versions": versions, "errors": errors, "maps": maps}


def _load_one(key: str, path: str, box: sandbox.Sandbox | None) -> dict[str, object]:
    argv = [sys.executable, os.path.abspath(__file__), "--load", json.dumps([[key, path]])]
    try:
        if box is not None:
            proc = box.run(argv, LOAD_TIMEOUT)
        else:
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=LOAD_TIMEOUT, check=False)
    except subprocess.TimeoutExpired:
        return {"versions": {}, "errors": {key: f"loading {path} took over {LOAD_TIMEOUT} s"}, "maps": []}
    try:
        return json.loads(proc.stdout)
    except ValueError:
        tail = " | ".join((proc.stderr or "").strip().splitlines()[-3:])
        how = f"killed by signal {-proc.returncode}" if proc.returncode < 0 else f"exit {proc.returncode}"
        return {"versions": {}, "errors": {key: f"loading {path}: {how}: {tail}"}, "maps": []}


def load_versions(
    dyn: list[dict[str, object]], extra: list[tuple[str, str]], box: sandbox.Sandbox | None = None
) -> dict[str, object]:
    """Each library opened in its own child process (one that aborts takes no other with it)."""
    pairs = [(row["lib"], row["to"]) for row in dyn if row["to"]] + extra
    out: dict[str, object] = {"versions": {}, "errors": {}, "maps": {}}
    for key, path in pairs:
        one = _load_one(key, path, box)
        out["versions"].update(one.get("versions", {}))
        out["errors"].update(one.get("errors", {}))
        out["maps"][key] = one.get("maps", [])
    return out


def report(
    spec: dict[str, object],
    sites: list[str],
    box: sandbox.Sandbox | None = None,
    caches: list[str] | None = None,
) -> dict[str, object]:
    """The facts; with ``caches`` (a list, maybe empty) every shared object of the environment too."""
    loader = Loader()
    host_libs = list(spec.get("host_libraries", []))
    frameworks = find_frameworks(sites)
    libraries: dict[str, dict[str, object]] = {}
    out_fw: dict[str, object] = {}
    for name, fw in sorted(frameworks.items()):
        links = walk(fw["roots"], loader, host_libs, libraries)
        dyn = dynload(fw, spec.get("dynload", {}).get(name, {}), loader, libraries)
        extra: list[tuple[str, str]] = []
        have = {r["lib"] for r in dyn if r["to"]}
        for lk in links:  # what the framework links (torch): read its version too
            m = LIB_KEY.match(lk["name"])
            if m and m.group(1) not in have and lk["to"]:
                extra.append((m.group(1), lk["to"]))
                have.add(m.group(1))
        loaded = load_versions(dyn, extra, box)
        out_fw[name] = {k: v for k, v in fw.items() if k != "roots"}
        out_fw[name].update({"roots": fw["roots"], "links": links, "dynload": dyn, "loaded": loaded})
    compat = sorted(glob.glob("/usr/local/cuda*/compat/libcuda.so*"))
    every = packages.every_library(sites, caches, libraries) if caches is not None else None
    return {
        "kind": KIND,
        "schema": SCHEMA,
        "python": sys.version.split()[0],
        "sites": sites,
        "frameworks": out_fw,
        "libraries": dict(sorted(libraries.items())),
        "cuda_present": cuda_present(sites, loader),
        "compat_libcuda": compat,
        "ld_library_path": loader.ld_library_path,
        "load_sandbox": box.describe() if box is not None else None,
        "owners": every["owners"] if every else {},
        # the NVIDIA Container Toolkit's constraints this image carries (inside an image only)
        "nvidia_require": _requirements() if box is None else {},
        "walk": every["walk"] if every else None,
    }


def _requirements() -> dict[str, str]:
    """``NVIDIA_REQUIRE_*`` of this process's environment (the image's ENV), 64 at most."""
    found = {k: v[:4096] for k, v in os.environ.items() if k.startswith("NVIDIA_REQUIRE_")}
    return dict(sorted(found.items())[:64])


def _version_text(lib: str, value: Any) -> Any:
    """A version call's integer as people write it (the host's ``readiness.rules.format_version``)."""
    if not isinstance(value, int) or isinstance(value, bool):
        return value
    if lib == "cudart":
        return f"{value // 1000}.{value % 1000 // 10}"
    if lib == "cudnn":
        unit = 1000 if value < 90000 else 10000
        rest = value - value // unit * unit
        return f"{value // unit}.{rest // 100}.{rest % 100}"
    if lib in ("nccl", "cublasLt"):
        return f"{value // 10000}.{value % 10000 // 100}.{value % 100}"
    if lib in ("cufft", "curand"):
        return f"{value // 1000}.{value % 1000 // 100}.{value % 100}"
    return str(value)


def summary(doc: dict[str, object]) -> dict[str, object]:
    """The compact facts a probe fingerprint carries (the host's ``readiness.check.fingerprint_facts``
    of the same report; a test holds them equal): per framework its CUDA build, the runtime and
    library versions loaded (and from where); per library with GPU code its SASS and PTX targets."""
    frameworks: dict[str, object] = {}
    for name, fw in sorted(doc.get("frameworks", {}).items()):
        loaded = fw.get("loaded", {})
        versions = {k: _version_text(k, v) for k, v in sorted(loaded.get("versions", {}).items())}
        files = {
            p for paths in loaded.get("maps", {}).values() for p in paths if "nvidia" in p or "cuda" in p
        }
        linked = any(lk.get("name", "").startswith("libcudart.so") for lk in fw.get("links", []))
        frameworks[name] = {
            "version": fw.get("version"),
            "cuda_build": fw.get("cuda"),
            "cudnn_build": fw.get("cudnn"),
            "cuda_runtime": versions.get("cudart") if linked and versions.get("cudart") else fw.get("cuda"),
            "loaded": versions,
            "loaded_files": sorted(files),
        }
    gpu_code = {}
    for path, lib in doc.get("libraries", {}).items():
        if lib.get("fatbins"):
            gpu_code[lib.get("soname") or path.rsplit("/", 1)[-1]] = {
                "fatbins": lib["fatbins"],
                "sass": sorted(lib.get("sass", {})),
                "ptx": sorted(lib.get("ptx", {})),
            }
    return {"frameworks": frameworks, "gpu_code": dict(sorted(gpu_code.items()))}


def site_dirs() -> list[str]:
    """This interpreter's site-packages (and Debian's dist-packages) directories: where the scan looks."""
    return [p for p in sys.path if p and os.path.isdir(p) and ("site-packages" in p or "dist-packages" in p)]


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="ready.py", description=__doc__)
    p.add_argument(
        "--spec", default="{}", help="JSON: dynload table and host libraries (from envkit's catalog)"
    )
    p.add_argument(
        "--site", action="append", default=[], help="site directory to look in (default: sys.path)"
    )
    p.add_argument(
        "--sandbox",
        action="store_true",
        help="open libraries with an empty environment, a scratch directory and no network (host use)",
    )
    p.add_argument(
        "--cache",
        dest="caches",
        action="append",
        default=[],
        help="a JIT cache to read too (~/.cache/torch_extensions)",
    )
    p.add_argument("--load", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.load:
        print(json.dumps(child_load([tuple(x) for x in json.loads(args.load)])))
        return 0
    spec = json.loads(args.spec)
    box = sandbox.Sandbox() if args.sandbox else None
    print(json.dumps(report(spec, args.site or site_dirs(), box, args.caches), sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
