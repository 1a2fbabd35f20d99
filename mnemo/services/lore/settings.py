"""The lore service's section of the settings tree (``MNEMO_LORE__<KEY>``), read once at start."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

SECTION = "lore"


class DocumentSettings(BaseModel):
    """``MNEMO_LORE__DOCUMENTS__<KEY>``: importing uploaded documents (the upload size limit is
    ``MNEMO_STREAMS__UPLOAD_MAX_OBJECT_BYTES``, beside the bucket's)."""

    model_config = ConfigDict(frozen=True)

    parse_timeout_s: float = Field(300.0, gt=0, description="wall and CPU time one file may take to read and chunk")
    parse_memory_mb: int = Field(
        2048, ge=256, description="address space of the parsing subprocess (a hostile file exhausts only that)"
    )
    concurrent_imports: int = Field(2, ge=1, description="files read at once per lore replica (each a subprocess)")
    chunks_per_event: int = Field(
        100, ge=1, le=500, description="chunks per `document.chunked` event (each event stays far under 1 MB)"
    )
    work_dir: Path | None = Field(None, description="where a download is kept while it is read (unset: the system's)")


class LoreSettings(BaseModel):
    model_config = ConfigDict(frozen=True)

    documents: DocumentSettings = Field(default_factory=DocumentSettings)
