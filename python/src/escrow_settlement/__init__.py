"""escrow_settlement: the Python client and offline verifier of the escrow settlement service."""

__version__ = "0.5.0"

from .verify import Check, VerifyResult, verify_bundle  # noqa: E402

__all__ = ["__version__", "verify_bundle", "VerifyResult", "Check"]
