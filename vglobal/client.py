"""``from vglobal.client import Client`` as before: the SDK lives in ``vglobal.sdk``."""

from vglobal.sdk import DEFAULT_HUB, Client, Dial, DialError, JobWatch, VGlobalError, default_hub

__all__ = ["DEFAULT_HUB", "Client", "Dial", "DialError", "JobWatch", "VGlobalError", "default_hub"]
