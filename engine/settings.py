"""One settings object, built once (at startup, from FELTSENSE_* environment variables) and passed down.

Nothing reads the environment at import time. Adapters take explicit arguments; ``engine.factory`` is the one
place that turns settings into backends.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="FELTSENSE_", env_nested_delimiter="__", extra="ignore")

    data_dir: Path = Field(default=Path("data"), description="where the embedded store keeps its files")
    store: Literal["embedded"] = "embedded"
    embedder: Literal["local", "hashing"] = Field(
        default="local", description="local: the offline MiniLM ONNX model; hashing: unit tests only"
    )
    classifier: Literal["local"] = "local"
    host: str = "127.0.0.1"
    port: int = Field(default=8000, ge=1, le=65535)
    background_interval_s: float = Field(
        default=30.0, gt=0, description="how often pending traces are retried in the background"
    )
