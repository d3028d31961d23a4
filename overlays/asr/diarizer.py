"""The diarizer behind POST /v1/audio/diarize-chunk: a streaming 4-speaker Sortformer model for
per-frame speaker scores and a TitaNet speaker-verification model for one 192-float voice
fingerprint per detected speaker. Both come from NVIDIA NeMo; the embedding model is fetched on
first use (about 25 MB). The turning of scores into segments lives in diarize_logic.
"""

import io
import os
import tempfile
import threading

import diarize_logic

SAMPLE_RATE = 16000
DIARIZATION_MODEL = os.environ.get("DIARIZATION_MODEL", "nvidia/diar_streaming_sortformer_4spk-v2")
EMBEDDING_MODEL = os.environ.get("EMBEDDING_MODEL", "titanet_small")
# Streaming settings of the Sortformer speaker cache (in 80 ms frames), the model card's
# low-latency profile; a chunk the caller sends is processed in one pass of these windows.
STREAMING = {
    "chunk_len": int(os.environ.get("DIARIZATION_CHUNK_LEN", "124")),
    "chunk_right_context": int(os.environ.get("DIARIZATION_RIGHT_CONTEXT", "1")),
    "fifo_len": int(os.environ.get("DIARIZATION_FIFO_LEN", "124")),
    "spkcache_update_period": int(os.environ.get("DIARIZATION_CACHE_UPDATE", "124")),
    "spkcache_len": int(os.environ.get("DIARIZATION_CACHE_LEN", "188")),
}
# Shortest audio worth embedding: TitaNet needs some speech to say anything about a voice.
MIN_EMBED_S = 0.5


def _device():
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def read_audio(data):
    """Mono float32 samples at 16 kHz and the duration in seconds, from an uploaded file's bytes."""
    import numpy as np
    import soundfile as sf

    samples, rate = sf.read(io.BytesIO(data), dtype="float32", always_2d=True)
    mono = samples.mean(axis=1)
    if rate != SAMPLE_RATE:
        import librosa

        mono = librosa.resample(mono, orig_sr=rate, target_sr=SAMPLE_RATE)
    mono = np.ascontiguousarray(mono, dtype=np.float32)
    return mono, len(mono) / float(SAMPLE_RATE)


class Diarizer:
    """Loads each model once, on first use, and serialises inference (one GPU, one model each)."""

    def __init__(self, diarization_model=DIARIZATION_MODEL, embedding_model=EMBEDDING_MODEL):
        self.diarization_model = diarization_model
        self.embedding_model = embedding_model
        self._diar = None
        self._embed = None
        self._lock = threading.Lock()

    def _diarization(self):
        if self._diar is None:
            from nemo.collections.asr.models import SortformerEncLabelModel

            model = SortformerEncLabelModel.from_pretrained(self.diarization_model, map_location=_device())
            model.eval()
            modules = model.sortformer_modules
            for name, value in STREAMING.items():
                setattr(modules, name, value)
            self._diar = model
        return self._diar

    def _embedding(self):
        if self._embed is None:
            from nemo.collections.asr.models import EncDecSpeakerLabelModel

            model = EncDecSpeakerLabelModel.from_pretrained(model_name=self.embedding_model, map_location=_device())
            model.eval()
            self._embed = model
        return self._embed

    def scores(self, samples):
        """The model's per-frame per-speaker sigmoid scores as a frames x speakers list of lists."""
        import soundfile as sf
        import torch

        fd, path = tempfile.mkstemp(suffix=".wav", prefix="diarize_")
        os.close(fd)
        try:
            sf.write(path, samples, SAMPLE_RATE)
            with torch.inference_mode():
                _segments, probs = self._diarization().diarize(
                    audio=[path], batch_size=1, include_tensor_outputs=True, verbose=False
                )
        finally:
            os.unlink(path)
        tensor = probs[0].detach().float().cpu().squeeze()
        if tensor.dim() == 1:
            tensor = tensor.unsqueeze(-1)
        return diarize_logic.orient_frames(tensor.tolist())

    def fingerprint(self, samples, spans):
        """One 192-float embedding of the speaker's speech in `spans` (seconds), or None."""
        import numpy as np
        import torch

        pieces = [samples[int(a * SAMPLE_RATE) : int(b * SAMPLE_RATE)] for a, b in spans]
        pieces = [p for p in pieces if len(p) > 0]
        if not pieces:
            return None
        audio = np.concatenate(pieces)
        if len(audio) < MIN_EMBED_S * SAMPLE_RATE:
            return None
        with torch.inference_mode():
            emb, _logits = self._embedding().infer_segment(audio)
        return emb.detach().float().cpu().reshape(-1).tolist()

    def diarize_chunk(self, data):
        """The diarize-chunk response for one uploaded audio chunk (spec 4.8)."""
        samples, duration = read_audio(data)
        with self._lock:
            frames = self.scores(samples)
            segments, _fps = diarize_logic.frames_to_segments(frames, duration)
            embeddings = {}
            for spk in diarize_logic.assign_labels(segments):
                embeddings[spk] = self.fingerprint(samples, diarize_logic.speaker_windows(segments, spk))
        return diarize_logic.shape_response(
            duration,
            segments,
            embeddings,
            {"diarization": self.diarization_model, "embedding": self.embedding_model},
        )


_shared = None
_shared_lock = threading.Lock()


def shared():
    """The process-wide diarizer."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = Diarizer()
        return _shared
