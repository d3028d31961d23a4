"""The diarizer's glue around the models, with NeMo, torch and soundfile replaced by fakes.

The real models cannot run here; these fakes have the shapes the NeMo calls return (a
batch x frames x speakers probability tensor, a 1 x 192 embedding), so the code between the
calls (orientation, frame rate from shape and duration, labels, embedding windows) runs for real.
"""

import os
import sys
import types
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

try:
    import numpy as np
except ImportError:  # the glue needs numpy; the pure logic's tests do not
    np = None


class FakeTensor:
    def __init__(self, a):
        self.a = np.asarray(a, dtype=np.float32)

    def detach(self):
        return self

    def float(self):
        return self

    def cpu(self):
        return self

    def squeeze(self):
        return FakeTensor(np.squeeze(self.a))

    def unsqueeze(self, dim):
        return FakeTensor(np.expand_dims(self.a, dim))

    def dim(self):
        return self.a.ndim

    def reshape(self, *shape):
        return FakeTensor(self.a.reshape(*shape))

    def tolist(self):
        return self.a.tolist()


class FakeSortformer:
    loaded = []

    def __init__(self, probs):
        self.probs = probs
        self.sortformer_modules = types.SimpleNamespace()
        self.calls = []

    @classmethod
    def from_pretrained(cls, name, map_location=None):
        cls.loaded.append((name, map_location))
        # 2 s at 16 kHz -> 25 frames (12.5 fps); speaker slot 2 speaks first, then slot 0.
        frames = np.full((25, 4), 0.02, dtype=np.float32)
        frames[0:12, 2] = 0.9
        frames[14:25, 0] = 0.7
        return cls(frames.T[None, :, :])  # batch x speakers x frames: the code must orient it

    def eval(self):
        return self

    def diarize(self, audio, batch_size, include_tensor_outputs, verbose):
        assert include_tensor_outputs and batch_size == 1 and os.path.exists(audio[0])
        self.calls.append(audio[0])
        return [["0.0 1.0 speaker_0"]], [FakeTensor(self.probs)]


class FakeTitanet:
    loaded = []

    @classmethod
    def from_pretrained(cls, model_name, map_location=None):
        cls.loaded.append(model_name)
        return cls()

    def eval(self):
        return self

    def infer_segment(self, segment):
        return FakeTensor(np.full((1, 192), float(len(segment)) / 1e6)), None


class Context:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def install_fakes():
    torch = types.ModuleType("torch")
    torch.cuda = types.SimpleNamespace(is_available=lambda: False)
    torch.inference_mode = Context
    sf = types.ModuleType("soundfile")

    def read(buf, dtype, always_2d):
        return np.zeros((32000, 2), dtype=np.float32), 16000

    def write(path, samples, rate):
        with open(path, "wb") as f:
            f.write(b"RIFF")

    sf.read = read
    sf.write = write
    models = types.ModuleType("nemo.collections.asr.models")
    models.SortformerEncLabelModel = FakeSortformer
    models.EncDecSpeakerLabelModel = FakeTitanet
    for name in ("nemo", "nemo.collections", "nemo.collections.asr"):
        sys.modules.setdefault(name, types.ModuleType(name))
    sys.modules.update({"torch": torch, "soundfile": sf, "nemo.collections.asr.models": models})


@unittest.skipIf(np is None, "numpy not installed")
class DiarizerGlue(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.saved = dict(sys.modules)
        install_fakes()
        import diarizer

        cls.diarizer = diarizer

    @classmethod
    def tearDownClass(cls):
        for name in list(sys.modules):
            if name not in cls.saved:
                del sys.modules[name]
        sys.modules.update(cls.saved)

    def test_chunk_response_from_model_outputs(self):
        d = self.diarizer.Diarizer("nvidia/sortformer-test", "titanet_small")
        self.assertEqual(FakeTitanet.loaded, [])  # the embedding model is fetched on first use only
        out = d.diarize_chunk(b"ignored by the fake reader")
        self.assertEqual(out["duration"], 2.0)
        self.assertEqual(out["speakers_detected"], ["speaker_0", "speaker_1"])
        self.assertEqual([s["speaker"] for s in out["segments"]], ["speaker_0", "speaker_1"])
        # 25 frames over 2 s: 12.5 fps, so slot 2's 12 frames end at 0.96 s.
        self.assertAlmostEqual(out["segments"][0]["end_s"], 0.96)
        self.assertAlmostEqual(out["segments"][0]["confidence"], 0.9, places=4)
        self.assertAlmostEqual(out["segments"][1]["confidence"], 0.7, places=4)
        self.assertEqual(sorted(out["fingerprints"]), ["speaker_0", "speaker_1"])
        self.assertTrue(all(len(v) == 192 for v in out["fingerprints"].values()))
        self.assertEqual(out["models"], {"diarization": "nvidia/sortformer-test", "embedding": "titanet_small"})
        self.assertEqual(FakeTitanet.loaded, ["titanet_small"])
        # The streaming settings reach the model's sortformer modules.
        self.assertEqual(d._diarization().sortformer_modules.chunk_len, self.diarizer.STREAMING["chunk_len"])
        # The temporary WAV is gone.
        self.assertFalse(os.path.exists(d._diarization().calls[0]))

    def test_models_load_once(self):
        d = self.diarizer.Diarizer()
        before = len(FakeSortformer.loaded)
        d.diarize_chunk(b"x")
        d.diarize_chunk(b"x")
        self.assertEqual(len(FakeSortformer.loaded), before + 1)


if __name__ == "__main__":
    unittest.main()
