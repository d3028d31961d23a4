"""Unit tests of the pure diarization logic (stdlib unittest; numpy only where importable)."""

import math
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import diarize_logic as dl  # noqa: E402

try:
    import numpy
except ImportError:  # Debian's python3-numpy is optional: the logic is pure Python.
    numpy = None


def frames(pattern, fps=12.5, hi=0.9, lo=0.05):
    """A frames x 4 matrix from a string: one char per frame, '0'..'3' the active speaker, '.' silence."""
    rows = []
    for ch in pattern:
        row = [lo] * 4
        if ch != ".":
            row[int(ch)] = hi
        rows.append(row)
    return rows, len(pattern) / fps


class FrameRate(unittest.TestCase):
    def test_derived_from_shape_and_duration(self):
        # 126 frames over 10 s: the streaming model's ~12.6 fps.
        self.assertAlmostEqual(dl.frame_rate(126, 10.0), 12.6)

    def test_not_computable(self):
        self.assertIsNone(dl.frame_rate(0, 10.0))
        self.assertIsNone(dl.frame_rate(10, 0))
        self.assertIsNone(dl.frame_rate(10, float("nan")))
        self.assertIsNone(dl.frame_rate(10, None))


class Orientation(unittest.TestCase):
    def test_frames_by_speakers_kept(self):
        m = [[0.1, 0.2, 0.3, 0.4]] * 6
        self.assertEqual(len(dl.orient_frames(m)), 6)

    def test_speakers_by_frames_transposed(self):
        m = [[0.9] * 30, [0.1] * 30, [0.0] * 30, [0.0] * 30]
        out = dl.orient_frames(m)
        self.assertEqual(len(out), 30)
        self.assertEqual(out[0], [0.9, 0.1, 0.0, 0.0])

    def test_too_many_speakers_refused(self):
        with self.assertRaises(ValueError):
            dl.orient_frames([[0.1] * 6] * 10)

    def test_ragged_refused(self):
        with self.assertRaises(ValueError):
            dl.orient_frames([[0.1, 0.2], [0.1]])

    @unittest.skipIf(numpy is None, "numpy not installed")
    def test_numpy_array_accepted(self):
        m = numpy.zeros((4, 40), dtype=numpy.float32)
        m[1, :] = 0.8
        out = dl.orient_frames(m)
        self.assertEqual(len(out), 40)
        self.assertAlmostEqual(out[0][1], 0.8, places=5)


class Segments(unittest.TestCase):
    def test_turns_become_segments_with_times(self):
        m, dur = frames("0" * 25 + "." * 10 + "1" * 25)
        segs, fps = dl.frames_to_segments(m, dur)
        self.assertAlmostEqual(fps, 12.5)
        self.assertEqual([s["speaker"] for s in segs], [0, 1])
        self.assertAlmostEqual(segs[0]["start_s"], 0.0)
        self.assertAlmostEqual(segs[0]["end_s"], 2.0)
        self.assertAlmostEqual(segs[1]["start_s"], 35 / 12.5)
        self.assertAlmostEqual(segs[1]["end_s"], 60 / 12.5)

    def test_short_gap_merged_long_gap_splits(self):
        m, dur = frames("0" * 10 + ".." + "0" * 10 + "." * 8 + "0" * 10)
        segs, _ = dl.frames_to_segments(m, dur)
        # 2 frames = 0.16 s < 0.25 s merge gap; 8 frames = 0.64 s splits.
        self.assertEqual(len(segs), 2)
        self.assertAlmostEqual(segs[0]["end_s"], 22 / 12.5)

    def test_blip_dropped(self):
        m, dur = frames("0" * 20 + "." * 10 + "1" + "." * 10)
        segs, _ = dl.frames_to_segments(m, dur)
        self.assertEqual([s["speaker"] for s in segs], [0])

    def test_overlap_goes_to_most_probable(self):
        rows = [[0.7, 0.95, 0.0, 0.0]] * 12 + [[0.9, 0.6, 0.0, 0.0]] * 12
        segs, _ = dl.frames_to_segments(rows, 24 / 12.5)
        self.assertEqual([s["speaker"] for s in segs], [1, 0])

    def test_silence_gives_no_segments(self):
        m, dur = frames("." * 40)
        self.assertEqual(dl.frames_to_segments(m, dur)[0], [])

    def test_end_clamped_to_duration(self):
        m, _ = frames("0" * 20)
        segs, _ = dl.frames_to_segments(m, 1.5)
        self.assertLessEqual(segs[-1]["end_s"], 1.5)

    def test_no_duration_no_segments(self):
        m, _ = frames("0" * 20)
        self.assertEqual(dl.frames_to_segments(m, 0), ([], None))


class Confidence(unittest.TestCase):
    def test_mean_of_assigned_speaker_over_segment_frames(self):
        rows = [[0.6, 0.1, 0.0, 0.0], [0.8, 0.1, 0.0, 0.0], [1.0, 0.2, 0.0, 0.0]] * 4
        segs, _ = dl.frames_to_segments(rows, 12 / 12.5)
        self.assertEqual(len(segs), 1)
        self.assertAlmostEqual(segs[0]["confidence"], 0.8)

    def test_merged_gap_frames_not_counted(self):
        rows = [[0.9, 0, 0, 0]] * 10 + [[0.1, 0, 0, 0]] * 2 + [[0.7, 0, 0, 0]] * 10
        segs, _ = dl.frames_to_segments(rows, 22 / 12.5)
        self.assertEqual(len(segs), 1)
        self.assertAlmostEqual(segs[0]["confidence"], 0.8)

    def test_in_unit_interval(self):
        self.assertEqual(dl.mean_probability([1.2, 1.0]), 1.0)
        self.assertEqual(dl.mean_probability([-0.5, 0.0]), 0.0)

    def test_null_when_not_computable(self):
        self.assertIsNone(dl.mean_probability([]))
        self.assertIsNone(dl.mean_probability([0.9, float("nan")]))
        rows = [[0.9, 0, 0, 0]] * 5 + [[float("nan"), 0, 0, 0]] + [[0.9, 0, 0, 0]] * 5
        segs, _ = dl.frames_to_segments(rows, 11 / 12.5)
        # The NaN frame is silence (not assigned), so it splits nothing and counts for nothing.
        self.assertAlmostEqual(segs[0]["confidence"], 0.9)

    def test_null_confidence_shaped_as_none(self):
        out = dl.shape_response(1.0, [{"start_s": 0, "end_s": 1, "speaker": 0, "confidence": None}], {}, {})
        self.assertIsNone(out["segments"][0]["confidence"])


class Labels(unittest.TestCase):
    def test_first_appearance_order(self):
        segs = [{"speaker": 2}, {"speaker": 0}, {"speaker": 2}, {"speaker": 3}]
        self.assertEqual(dl.assign_labels(segs), {2: "speaker_0", 0: "speaker_1", 3: "speaker_2"})

    def test_windows_longest_first_capped(self):
        segs = [
            {"speaker": 0, "start_s": 0.0, "end_s": 1.0},
            {"speaker": 0, "start_s": 5.0, "end_s": 9.0},
            {"speaker": 1, "start_s": 1.0, "end_s": 5.0},
        ]
        self.assertEqual(dl.speaker_windows(segs, 0, max_total_s=4.5), [(0.0, 0.5), (5.0, 9.0)])


class Response(unittest.TestCase):
    def test_shape(self):
        m, dur = frames("0" * 25 + "." * 10 + "1" * 25 + "." * 5 + "0" * 20)
        segs, _ = dl.frames_to_segments(m, dur)
        emb = {0: [0.5] * 192, 1: [0.1] * 191}
        out = dl.shape_response(dur, segs, emb, {"diarization": "d", "embedding": "e"})
        self.assertEqual(set(out), {"duration", "segments", "speakers_detected", "fingerprints", "models"})
        self.assertEqual(out["speakers_detected"], ["speaker_0", "speaker_1"])
        self.assertEqual([s["speaker"] for s in out["segments"]], ["speaker_0", "speaker_1", "speaker_0"])
        for s in out["segments"]:
            self.assertEqual(set(s), {"start_s", "end_s", "speaker", "confidence"})
            self.assertTrue(0 <= s["confidence"] <= 1)
        # speaker_1's embedding is not 192 floats: no fingerprint rather than a wrong one.
        self.assertEqual(list(out["fingerprints"]), ["speaker_0"])
        self.assertEqual(len(out["fingerprints"]["speaker_0"]), 192)
        self.assertEqual(out["models"], {"diarization": "d", "embedding": "e"})
        self.assertAlmostEqual(out["duration"], round(dur, 3))

    def test_embedding_with_nan_rejected(self):
        self.assertIsNone(dl.valid_embedding([0.1] * 191 + [math.nan]))
        self.assertEqual(len(dl.valid_embedding([0.1] * 192)), 192)


if __name__ == "__main__":
    unittest.main()
