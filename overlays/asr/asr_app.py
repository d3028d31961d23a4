"""The asr service's app entry with the diarize-chunk endpoint added.

The container serves this module's `app` (e.g. `uvicorn asr_app:app`): it imports the image's own
FastAPI app (ASR_BASE_APP, `module:attribute`, default `server:app`) and adds
POST /v1/audio/diarize-chunk, a per-chunk worker; chunking and global speaker clustering belong to
the caller.
"""

import importlib
import io
import os

from fastapi import File, HTTPException, UploadFile
from fastapi.concurrency import run_in_threadpool

import diarizer

BASE_APP = os.environ.get("ASR_BASE_APP", "server:app")
# Chunks are meant to be short; a bigger upload is a caller bug, refused before decoding.
MAX_CHUNK_BYTES = int(os.environ.get("DIARIZE_MAX_CHUNK_BYTES", str(64 * 1024 * 1024)))


def _load_base(spec):
    module_name, _, attr = spec.partition(":")
    return getattr(importlib.import_module(module_name), attr or "app")


app = _load_base(BASE_APP)


@app.post("/v1/audio/diarize-chunk")
async def diarize_chunk(file: UploadFile = File(...)):
    data = await file.read()
    if not data:
        raise HTTPException(status_code=400, detail="field 'file' is empty")
    if len(data) > MAX_CHUNK_BYTES:
        raise HTTPException(status_code=413, detail="audio chunk larger than %d bytes" % MAX_CHUNK_BYTES)
    try:
        import soundfile as sf

        sf.info(io.BytesIO(data))
    except Exception as err:
        raise HTTPException(status_code=400, detail="unreadable audio: %s" % err)
    # Inference holds the GPU for a while: off the event loop, so health checks keep answering.
    return await run_in_threadpool(diarizer.shared().diarize_chunk, data)
