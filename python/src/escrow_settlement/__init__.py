"""escrow_settlement: the Python client and offline verifier of the escrow settlement service.

- :func:`verify_bundle` checks a settlement bundle with no network, as the service's own verifier does;
  ``python3 -m escrow_settlement verify BUNDLE --trusted-key HEX`` is its command line.
- :class:`Client` calls every REST operation; :class:`SigningKey` signs a party's acts locally.
- :func:`verify_webhook` checks a webhook delivery against the pinned signing key.
"""

__version__ = "0.5.0"

from .client import ApiError, Client, content_hash  # noqa: E402
from .keys import SigningKey  # noqa: E402
from .verify import Check, VerifyResult, verify_bundle  # noqa: E402
from .webhooks import WebhookResult, verify_webhook  # noqa: E402

__all__ = [
    "__version__",
    "verify_bundle",
    "VerifyResult",
    "Check",
    "Client",
    "ApiError",
    "SigningKey",
    "content_hash",
    "verify_webhook",
    "WebhookResult",
]
