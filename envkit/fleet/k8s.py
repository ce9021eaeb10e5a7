"""Kubernetes Job manifests for a fleet probe: ``envkit probe --k8s --emit DIR``.

Built with the official ``kubernetes`` client's models (typed, serialized by its ``ApiClient``), so
the manifests have the API's field names and shapes; the tests validate them against the
Kubernetes API schema (``kubernetes-validate``). Running them needs a cluster (``kubectl apply -f DIR``).

One Job per node, pinned to it (``nodeSelector: kubernetes.io/hostname``), requesting
``nvidia.com/gpu``; a ConfigMap carries the probe payload (standard library + framework only), mounted
read-only; the shared store is a volume (a PersistentVolumeClaim, or a hostPath that every node
has). Each pod writes ``STORE/RUN/<node>.json`` (atomically: a temporary file, then ``mv``).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from envkit import payload
from envkit.errors import UsageError
from envkit.probe.runner import ProbeOptions, payload_argv

__all__ = [
    "Emitted",
    "K8sOptions",
    "dns_name",
    "emit_run",
    "job_manifests",
    "manifest_yaml",
    "write_manifests",
]

PAYLOAD_MOUNT = payload.CONTAINER_PAYLOAD
STORE_MOUNT = "/envkit-store"
LABEL = "envkit.io"
_DNS = re.compile(r"[^a-z0-9-]+")


@dataclass(frozen=True)
class K8sOptions:
    """The Kubernetes Jobs of a fleet run: nodes, image, payload arguments, namespace, store volume."""

    run_id: str
    nodes: tuple[str, ...]
    image: str
    payload_args: tuple[str, ...]
    namespace: str = "default"
    gpus_per_node: int = 1
    store_claim: str | None = None  # a PersistentVolumeClaim every node can mount
    store_host_path: str | None = None  # else: a hostPath that is the shared store on every node
    user: int = 1000  # images run as non-root


def dns_name(*parts: str, limit: int = 63) -> str:
    """A DNS-1123 label from ``parts`` (lowercase, digits, '-'; at most ``limit`` characters)."""
    text = _DNS.sub("-", "-".join(parts).lower()).strip("-")
    return text[:limit].rstrip("-") or "envkit"


def _store_volume(k8s: Any, opts: K8sOptions) -> Any:
    if opts.store_claim:
        source = k8s.V1PersistentVolumeClaimVolumeSource(claim_name=opts.store_claim)
        return k8s.V1Volume(name="store", persistent_volume_claim=source)
    if not opts.store_host_path:
        raise UsageError(
            "a Kubernetes fleet run needs the shared store", hint="give --store-claim PVC or --store"
        )
    source = k8s.V1HostPathVolumeSource(path=opts.store_host_path, type="Directory")
    return k8s.V1Volume(name="store", host_path=source)


def _script(opts: K8sOptions) -> str:
    out = f"{STORE_MOUNT}/{opts.run_id}"
    args = shlex.join(opts.payload_args)
    return (
        # noclobber (-C): `>` creates the temp file exclusively, never writing through a planted link
        f'set -Ceu; mkdir -p {out}; tmp={out}/.$NODE_NAME.json.tmp; rm -f "$tmp"; '
        f"{payload.find_python()}; "
        f'"$py" {payload.container_path("run.py")} {args} > "$tmp"; mv "$tmp" {out}/$NODE_NAME.json'
    )


def _job(k8s: Any, opts: K8sOptions, node: str, config_map: str) -> Any:
    labels = {
        f"{LABEL}/run": dns_name(opts.run_id),
        f"{LABEL}/node": dns_name(node),
        "app.kubernetes.io/name": "envkit-probe",
    }
    resources = None
    if opts.gpus_per_node:
        gpus = str(opts.gpus_per_node)
        resources = k8s.V1ResourceRequirements(
            limits={"nvidia.com/gpu": gpus}, requests={"nvidia.com/gpu": gpus}
        )
    container = k8s.V1Container(
        name="probe",
        image=opts.image,
        command=["sh", "-c", _script(opts)],
        env=[
            k8s.V1EnvVar(
                name="NODE_NAME",
                value_from=k8s.V1EnvVarSource(
                    field_ref=k8s.V1ObjectFieldSelector(field_path="spec.nodeName")
                ),
            ),
            k8s.V1EnvVar(name="PYTHONDONTWRITEBYTECODE", value="1"),
        ],
        resources=resources,
        volume_mounts=[
            k8s.V1VolumeMount(name="payload", mount_path=PAYLOAD_MOUNT, read_only=True),
            k8s.V1VolumeMount(name="store", mount_path=STORE_MOUNT),
        ],
        security_context=k8s.V1SecurityContext(
            run_as_non_root=True, run_as_user=opts.user, allow_privilege_escalation=False
        ),
    )
    pod = k8s.V1PodSpec(
        restart_policy="Never",
        node_selector={"kubernetes.io/hostname": node},
        containers=[container],
        volumes=[
            k8s.V1Volume(name="payload", config_map=k8s.V1ConfigMapVolumeSource(name=config_map)),
            _store_volume(k8s, opts),
        ],
    )
    return k8s.V1Job(
        api_version="batch/v1",
        kind="Job",
        metadata=k8s.V1ObjectMeta(
            name=dns_name("envkit", opts.run_id, node), namespace=opts.namespace, labels=labels
        ),
        spec=k8s.V1JobSpec(
            backoff_limit=0,
            ttl_seconds_after_finished=7 * 24 * 3600,
            template=k8s.V1PodTemplateSpec(metadata=k8s.V1ObjectMeta(labels=labels), spec=pod),
        ),
    )


def job_manifests(opts: K8sOptions) -> list[dict[str, Any]]:
    """The payload ConfigMap, then one Job per node, as plain dicts in the API's shape."""
    try:
        from kubernetes import client as k8s
    except ImportError as e:
        raise UsageError("--k8s needs the kubernetes client", hint="pip install 'envkit[k8s]'") from e
    if not opts.nodes:
        raise UsageError("--k8s needs the nodes to pin", hint="--nodelist node1,node2,…")
    config_map = dns_name("envkit-payload", opts.run_id)
    objects: list[Any] = [
        k8s.V1ConfigMap(
            api_version="v1",
            kind="ConfigMap",
            metadata=k8s.V1ObjectMeta(
                name=config_map, namespace=opts.namespace, labels={f"{LABEL}/run": dns_name(opts.run_id)}
            ),
            data=payload.payload_files(),
        )
    ]
    objects += [_job(k8s, opts, node, config_map) for node in opts.nodes]
    api = k8s.ApiClient()
    return [api.sanitize_for_serialization(o) for o in objects]  # type: ignore[no-untyped-call]


def manifest_yaml(manifest: dict[str, object]) -> str:
    return "# generated by envkit (probe --k8s); apply with `kubectl apply -f`\n" + yaml.safe_dump(
        manifest, sort_keys=True, default_flow_style=False, width=1000
    )


def write_manifests(manifests: Sequence[dict[str, Any]], folder: Path) -> list[Path]:
    from envkit._atomic import write_text_atomic

    paths = []
    for m in manifests:
        kind = str(m["kind"]).lower()
        path = folder / f"{kind}-{m['metadata']['name']}.yaml"
        write_text_atomic(path, manifest_yaml(m))
        paths.append(path)
    return paths


@dataclass(frozen=True)
class Emitted:
    """A Kubernetes run written out: its id, the manifest files and the run's folder in the store."""

    run_id: str
    paths: tuple[Path, ...]
    run_dir: Path


def emit_run(
    root: Path,
    store: Path,
    probe: ProbeOptions,
    *,
    image: str,
    nodes: tuple[str, ...],
    emit: Path,
    run_id: str | None = None,
    namespace: str = "default",
    gpus_per_node: int = 1,
    store_claim: str | None = None,
) -> Emitted:
    """``envkit probe --k8s``: the ConfigMap and Job manifests into ``emit``, the run's manifest into
    ``store``.

    ``image`` is ``REPO@sha256:…``, or an environment pushed by ``envkit build NAME --push`` (its
    recorded digest); the nodes pull it from the registry, by digest.
    """
    from envkit.fleet.images import pushed_ref
    from envkit.fleet.run_plan import write_manifest
    from envkit.store import layout, runs

    ref = image if "@sha256:" in image else pushed_ref(root, image)
    if ref is None:
        raise UsageError(
            f"Kubernetes nodes pull {image} from a registry, by digest",
            hint=f"push it first: envkit build {image} --push REGISTRY (or give REPO@sha256:…)",
        )
    run_id = layout.check_run_id(run_id or layout.new_run_id())
    opts = K8sOptions(
        run_id=run_id, nodes=nodes, image=ref, payload_args=tuple(payload_argv(probe, probe.frameworks)),
        namespace=namespace, gpus_per_node=gpus_per_node, store_claim=store_claim,
        store_host_path=None if store_claim else str(store),
    )  # fmt: skip
    run_dir = runs.create_run_dir(store, run_id)  # exclusively: an existing run id is refused
    paths = write_manifests(job_manifests(opts), emit)
    write_manifest(
        run_dir, scheduler="kubernetes", options=probe, image={"ref": ref}, tasks_per_node=1,
        nodes=len(nodes), nodelist=nodes,
    )  # fmt: skip
    return Emitted(run_id, tuple(paths), store / run_id)
