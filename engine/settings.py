"""One settings object, built once (at startup, from environment variables) and passed down.

Nothing reads the environment at import time. Adapters take explicit arguments; ``engine.factory`` is the one
place that turns settings into backends. Nested values use a double underscore:
``FELTSENSE_WEAVIATE__URL=http://127.0.0.1:8080``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

DEFAULT_TRANSCRIPT_DIRS = (Path("tests/transcripts"), Path("../shared/transcripts/examples"))
"""What ``make serve`` from a checkout offers: its test transcripts and the shared examples beside it."""


class WeaviateSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    url: str = Field(default="http://127.0.0.1:8080", description="the server's HTTP address")
    grpc_port: int = Field(default=50051, ge=1, le=65535, description="the server's gRPC port (same host)")
    api_key: SecretStr | None = Field(default=None, description="for a server with API-key auth")
    collection_prefix: str = Field(
        default="Feltsense", pattern=r"^[A-Z][A-Za-z0-9]*$", description="collection names start with this"
    )
    timeout_s: float = Field(default=30.0, gt=0)


class MistralSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    server_url: str | None = Field(default=None, description="the API's address; the SDK's default when unset")
    embed_model: str = "mistral-embed"
    embed_dimension: int = Field(default=1024, ge=1)
    chat_model: str = Field(default="mistral-small-latest", description="the write-time classifier's model")
    timeout_s: float = Field(default=30.0, gt=0)
    max_retries: int = Field(default=4, ge=0, le=10, description="retries on 429 and 5xx, with backoff")
    batch_size: int = Field(default=64, ge=1, le=512, description="texts per embeddings request")


POSTGRES_SCHEMES = ("postgresql://", "postgres://")


class PostgresSettings(BaseModel):
    """``FELTSENSE_POSTGRES__URL`` and its pool. The URL carries the password, so an invalid one is reported by its
    scheme alone: it is wrapped in a ``SecretStr`` before it is checked, and errors show ``'**********'``."""

    model_config = ConfigDict(extra="forbid")

    url: SecretStr | None = Field(
        default=None,
        description=(
            "the control plane's database: keys, tuning versions and the ledger; unset keeps them in SQLite files "
            "in the data directory (postgresql://user:password@host:port/dbname)"
        ),
    )
    pool_min_size: int = Field(default=1, ge=1, le=100, description="connections each process keeps open")
    pool_max_size: int = Field(default=8, ge=1, le=200, description="connections each process may open at most")
    timeout_s: float = Field(
        default=10.0, gt=0, le=300, description="to connect at startup, and to wait for a free pooled connection"
    )

    @model_validator(mode="before")
    @classmethod
    def _hide_url(cls, data: object) -> object:
        # pydantic's errors echo the input; a SecretStr input is echoed as stars.
        # An empty FELTSENSE_POSTGRES__URL counts as unset.
        if isinstance(data, dict) and isinstance(data.get("url"), str):
            return {**data, "url": SecretStr(data["url"]) if data["url"] else None}
        return data

    @field_validator("url")
    @classmethod
    def _check_scheme(cls, value: SecretStr | None) -> SecretStr | None:
        if value is None:
            return None
        url = value.get_secret_value()
        if not url.startswith(POSTGRES_SCHEMES):
            scheme = url.split("://", 1)[0] + "://" if "://" in url else "no scheme"
            raise ValueError(
                f"FELTSENSE_POSTGRES__URL must start with postgresql:// or postgres:// "
                f"(postgresql://user:password@host:port/dbname), not {scheme}"
            )
        return value

    @model_validator(mode="after")
    def _check_pool(self) -> PostgresSettings:
        if self.pool_max_size < self.pool_min_size:
            raise ValueError(
                f"FELTSENSE_POSTGRES__POOL_MAX_SIZE ({self.pool_max_size}) is below "
                f"FELTSENSE_POSTGRES__POOL_MIN_SIZE ({self.pool_min_size})"
            )
        return self


class RecallLogSettings(BaseModel):
    """The recall log's retention, which the nightly sweep enforces."""

    model_config = ConfigDict(extra="forbid")

    days: int = Field(default=30, ge=1, le=3650, description="recalls logged longer ago than this are removed")
    max_bytes: int | None = Field(
        default=1_073_741_824, ge=1_048_576,
        description="then the oldest recalls until the bodies left total at most this (UTF-8 bytes); unset: no bound",
    )


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="FELTSENSE_", env_nested_delimiter="__", extra="ignore", populate_by_name=True
    )

    data_dir: Path = Field(default=Path("data"), description="where the embedded store keeps its files")
    store: Literal["embedded", "weaviate"] = "embedded"
    embedder: Literal["local", "mistral", "hashing"] = Field(
        default="local", description="local: the offline MiniLM ONNX model; mistral: mistral-embed; hashing: tests"
    )
    local_model: Literal["minilm-l6-qint8", "minilm-l6"] = Field(
        default="minilm-l6",
        description=(
            "the local embedder's build: minilm-l6 is the PyPI model as shipped, computing in fp32 (the default, "
            "which the classifiers were trained on); minilm-l6-qint8 computes in int8, 2.5x faster a query. A "
            "store holds one build's vectors"
        ),
    )
    classifier: Literal["local", "local-v1", "mistral"] = Field(
        default="local",
        description=(
            "local: the offline session classifier (v2, reads each turn in its session); local-v1: the previous "
            "sentence classifier, kept so older traces can be reproduced; mistral: one structured call per session"
        ),
    )
    weaviate: WeaviateSettings = WeaviateSettings()
    mistral: MistralSettings = MistralSettings()
    recall_log: RecallLogSettings = RecallLogSettings()
    postgres: PostgresSettings = PostgresSettings()
    mistral_api_key: SecretStr | None = Field(
        default=None,
        validation_alias=AliasChoices("MISTRAL_API_KEY", "FELTSENSE_MISTRAL_API_KEY"),
        description="read from MISTRAL_API_KEY",
    )
    host: str = "127.0.0.1"
    port: int = Field(default=8000, ge=1, le=65535)
    http_access_log: bool = Field(
        default=False,
        description="uvicorn's line per HTTP request; every recall logs its own line (with the mode that answered)",
    )
    background_interval_s: float = Field(
        default=30.0, gt=0, description="how often the background pass backfills vectors and retries traces"
    )
    redis_url: str | None = Field(
        default=None, pattern=r"^(redis|rediss|unix)://",
        description="an arq queue in Redis for the write-time jobs (run `feltsense worker`); unset: in-process",
    )
    transcript_dirs: Annotated[tuple[Path, ...], NoDecode] = Field(
        default=DEFAULT_TRANSCRIPT_DIRS,
        description=(
            "the directories whose transcripts the tuning page offers for replay, separated by the path separator "
            "(':'; ';' on Windows) in the environment; relative ones are against the working directory, missing "
            "ones are skipped, an empty value offers none"
        ),
    )

    @field_validator("transcript_dirs", mode="before")
    @classmethod
    def _split_transcript_dirs(cls, value: object) -> object:
        # From the environment the value is one string, like PATH; pydantic-settings would read it as JSON.
        if isinstance(value, str):
            return tuple(Path(part) for part in value.split(os.pathsep) if part)
        return value
