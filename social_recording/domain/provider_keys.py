"""Provider credentials by the environment variable that holds them: a plain value at the bottom
layer, so the sandbox's placeholder keys and every generator take the same type without importing
each other (docs/architecture.md, "Layers"); `social_recording.platforms.base` exports it too."""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import SecretStr


class ProviderKeys:
    """Provider credentials by the environment variable that holds them (`ProviderKeys({"APIFY_TOKEN":
    ...})`, or `apify_token=...`: the variable's name in lower case). Each is sent only to its own
    provider's host and never shown: the repr names the variables that are set."""

    def __init__(self, values: Mapping[str, SecretStr | str | None] | None = None, /,
                 **by_name: SecretStr | str | None) -> None:
        merged = {**(values or {}), **{name.upper(): value for name, value in by_name.items()}}
        self._values = {
            variable: value if isinstance(value, SecretStr) else SecretStr(value)
            for variable, value in merged.items() if value is not None
        }

    def secret(self, variable: str | None) -> SecretStr | None:
        return None if variable is None else self._values.get(variable)

    def value(self, variable: str | None) -> str | None:
        """The key held by `variable` (None when unset or blank)."""
        secret = self.secret(variable)
        if secret is None:
            return None
        return secret.get_secret_value().strip() or None

    def __repr__(self) -> str:
        return f"ProviderKeys(set={sorted(v for v in self._values if self.value(v))})"
