"""Where jobs find the filesystems the design states (`filesystems:`, or an existing parallel filesystem): a bind
mount each for Slurm's pyxis containers (an enroot mounts.d file) and a hostPath PersistentVolume each for
Kubernetes. The GPU nodes' own mounts are the site's client set-up, not in the plan; these make them reach the jobs.
"""

from __future__ import annotations

from typing import Any

from gpucluster.plan.model import Plan

# enroot's mounts.d entries are fstab(5) lines read into every container it starts (NVIDIA/enroot, doc/configuration.md
# "/etc/enroot/mounts.d"; its own hook conf/hooks/20-autorc.sh writes "<src> <dst> none bind,x-create=file,...").
# x-create=dir makes the mount point inside the image; no nofail: a node without the filesystem fails the job
# instead of letting it write into the container's own directory.
ENROOT_MOUNT_OPTIONS = "x-create=dir,bind,nosuid"


def enroot_mounts(plan: Plan) -> str:
    """An enroot mounts.d file: each filesystem bound into every pyxis container at the same path."""
    filesystems = plan.settings.filesystems  # None: the parallel filesystem alone, its mount point not stated
    if not filesystems:
        return ""
    lines = [
        "# Install as /etc/enroot/mounts.d/50-filesystems.fstab on every GPU node: pyxis containers see the",
        "# filesystems the node mounts, at the same paths.",
    ]
    for fs in filesystems:
        origin = "existing" if fs["existing"] else "new"
        lines.append(f"# {fs['name']}: {fs['kind']}, {origin}")
        lines.append(f"{fs['mount']} {fs['mount']} none {ENROOT_MOUNT_OPTIONS}")
    return "\n".join(lines) + "\n"


def persistent_volumes(plan: Plan) -> list[dict[str, Any]]:
    """A hostPath PersistentVolume per filesystem (ReadWriteMany, retained): pods claim the node's mount."""
    volumes = []
    for fs in plan.settings.filesystems or ():
        capacity_gb = round((fs["capacity_tb"] or 0.0) * 1000)
        volumes.append(
            {
                "apiVersion": "v1",
                "kind": "PersistentVolume",
                "metadata": {
                    "name": f"filesystem-{fs['name']}",
                    "labels": {"filesystem": fs["name"], "filesystem-kind": fs["kind"]},
                },
                "spec": {
                    "capacity": {"storage": f"{capacity_gb}G"},
                    "accessModes": ["ReadWriteMany"],
                    "persistentVolumeReclaimPolicy": "Retain",
                    "storageClassName": "",
                    "hostPath": {"path": fs["mount"], "type": "Directory"},
                },
            }
        )
    return volumes
