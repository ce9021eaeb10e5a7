"""``probe --k8s --emit``: manifests from the official client's models, valid against the API schema.

``kubernetes-validate`` carries the Kubernetes OpenAPI schemas (no cluster, no network); strict
mode also refuses fields the schema does not know.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import yaml

from envkit.cli import main
from envkit.errors import UsageError
from envkit.fleet.k8s import K8sOptions, dns_name, job_manifests

kv = pytest.importorskip("kubernetes_validate")
pytest.importorskip("kubernetes")

REF = "127.0.0.1:5000/envkit/x@sha256:" + "a" * 64
SCHEMA_VERSION = "1.30"


def _opts(**kw: object) -> K8sOptions:
    base: dict[str, object] = {"run_id": "run-1", "nodes": ("gpu-node-01", "GPU_node_02"), "image": REF,
                               "payload_args": ("--frameworks", "torch", "--steps", "20"),
                               "store_host_path": "/shared/s"}  # fmt: skip
    base.update(kw)
    return K8sOptions(**base)  # type: ignore[arg-type]


def test_every_manifest_validates_against_the_api_schema() -> None:
    manifests = job_manifests(_opts())
    assert [m["kind"] for m in manifests] == ["ConfigMap", "Job", "Job"]
    for m in manifests:
        assert kv.validate(m, SCHEMA_VERSION, strict=True) == SCHEMA_VERSION
    job = manifests[2]
    pod = job["spec"]["template"]["spec"]
    assert job["metadata"]["name"] == "envkit-run-1-gpu-node-02"
    assert pod["nodeSelector"] == {"kubernetes.io/hostname": "GPU_node_02"}
    container = pod["containers"][0]
    assert container["image"] == REF
    assert container["resources"]["limits"] == {"nvidia.com/gpu": "1"}
    assert container["securityContext"]["runAsNonRoot"] is True
    assert "run.py --frameworks torch --steps 20" in container["command"][2]
    assert {v["name"] for v in pod["volumes"]} == {"payload", "store"}
    assert "run.py" in manifests[0]["data"] and "torch_probe.py" in manifests[0]["data"]


def test_a_broken_manifest_fails_the_schema() -> None:
    job = copy.deepcopy(job_manifests(_opts())[1])
    job["spec"]["backoffLimit"] = "zero"
    with pytest.raises(kv.ValidationError):
        kv.validate(job, SCHEMA_VERSION, strict=True)
    job = copy.deepcopy(job_manifests(_opts())[1])
    job["spec"]["template"]["spec"]["containers"][0]["gpus"] = 1
    with pytest.raises(kv.ValidationError):
        kv.validate(job, SCHEMA_VERSION, strict=True)


def test_claim_and_cpu_only() -> None:
    job = job_manifests(_opts(store_claim="fleet-store", store_host_path=None, gpus_per_node=0))[1]
    pod = job["spec"]["template"]["spec"]
    assert {"name": "store", "persistentVolumeClaim": {"claimName": "fleet-store"}} in pod["volumes"]
    assert "resources" not in pod["containers"][0]
    assert kv.validate(job, SCHEMA_VERSION, strict=True)
    with pytest.raises(UsageError):
        job_manifests(_opts(nodes=()))
    assert dns_name("envkit", "Run_1", "x" * 80) == ("envkit-run-1-" + "x" * 80)[:63]


def test_cli_emits_and_refuses_an_image_without_digest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    emit, store = tmp_path / "k8s", tmp_path / "store"
    argv = [
        "probe",
        "--k8s",
        "--emit",
        str(emit),
        "--nodelist",
        "n1,n2",
        "--store",
        str(store),
        "--run-id",
        "r1",
    ]
    assert main([*argv, "--image", REF, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)["result"]
    assert len(out["manifests"]) == 3 and (store / "r1" / "run.json").is_file()
    for path in out["manifests"]:
        assert kv.validate(yaml.safe_load(Path(path).read_text()), SCHEMA_VERSION, strict=True)
    assert main([*argv[:-2], "--run-id", "r2", "--image", "envkit/never-pushed"]) == 2
    assert "by digest" in capsys.readouterr().err


def test_help_says_it_needs_a_cluster(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["probe", "--help"]) == 0
    assert "needs a cluster" in " ".join(capsys.readouterr().out.split())
