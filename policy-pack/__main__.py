"""The policy pack: `pulumi preview --policy-pack policy-pack`. The policies are built from the design
rules in gpucluster.components.policy (importable and tested there; constructing PolicyPack starts the
analyzer's gRPC server, so it happens only here)."""

from pulumi_policy import PolicyPack

from gpucluster.components.policy import POLICY_PACK_NAME, policies

PolicyPack(name=POLICY_PACK_NAME, policies=policies())
