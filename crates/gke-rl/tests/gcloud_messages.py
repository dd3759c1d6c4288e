"""Reads each fixture as the installed gcloud's own API client would, and prints every field it
does not know, one per line.

argv: the Google Cloud SDK's root, then pairs of (kind, path): kind `cluster` is GKE v1's
`Cluster`, `instance` Managed Lustre v1's `Instance`. A field of the wrong type fails to decode.
"""

import sys

sdk_root = sys.argv[1]
sys.path[:0] = [f"{sdk_root}/lib", f"{sdk_root}/lib/third_party"]

from apitools.base.protorpclite import messages  # noqa: E402
from apitools.base.py import encoding  # noqa: E402
from googlecloudsdk.generated_clients.apis.container.v1 import container_v1_messages  # noqa: E402
from googlecloudsdk.generated_clients.apis.lustre.v1 import lustre_v1_messages  # noqa: E402

KINDS = {"cluster": container_v1_messages.Cluster, "instance": lustre_v1_messages.Instance}


def unknown(message, path):
    """The dotted paths of the fields under `message` that its class does not declare."""
    found = [f"{path}.{name}" for name in message.all_unrecognized_fields()]
    for field in message.all_fields():
        value = message.get_assigned_value(field.name)
        for item in (value or []) if field.repeated else [value]:
            if isinstance(item, messages.Message):
                found += unknown(item, f"{path}.{field.name}")
    return found


args = sys.argv[2:]
for kind, path in zip(args[::2], args[1::2]):
    with open(path, encoding="utf-8") as f:
        decoded = encoding.JsonToMessage(KINDS[kind], f.read())
    for field in unknown(decoded, path):
        print(field)
