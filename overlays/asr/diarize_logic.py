"""Pure diarization logic for the diarize-chunk endpoint: no model, no numpy required.

Everything here works on plain Python lists (a numpy array is accepted wherever a list is, since
only iteration, len() and float() are used), so it is unit-tested without the models installed.

The model gives a frames x speakers matrix of sigmoid scores (at most 4 speakers); this module
turns it into segments with chunk-local labels, per-segment confidence, and the response shape of
the diarize-chunk endpoint.
"""

import math

MAX_SPEAKERS = 4
EMBEDDING_SIZE = 192
# A speaker is active in a frame when its sigmoid score reaches this.
ACTIVE_THRESHOLD = 0.5
# Same-speaker segments closer than this are one segment (short dips inside a turn).
MERGE_GAP_S = 0.25
# Segments shorter than this after merging are dropped (clicks, breaths).
MIN_SEGMENT_S = 0.16
LABEL_PREFIX = "speaker_"


def _finite(x):
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def as_rows(matrix):
    """The model output as a list of per-row lists of floats (non-numbers become NaN)."""
    rows = []
    for row in matrix:
        try:
            items = list(row)
        except TypeError:
            items = [row]
        rows.append([float("nan") if _finite(x) is None else float(x) for x in items])
    return rows


def orient_frames(matrix, max_speakers=MAX_SPEAKERS):
    """Frames x speakers, whichever way round the model returned it.

    Batch and singleton dimensions are squeezed by the caller. The model has a fixed number of
    speaker slots, so a matrix at most `max_speakers` wide is frames x speakers; one that is wider
    but at most `max_speakers` tall is speakers x frames and is transposed.
    """
    rows = as_rows(matrix)
    if not rows:
        return []
    width = len(rows[0])
    if any(len(r) != width for r in rows):
        raise ValueError("ragged score matrix")
    if width <= max_speakers:
        return rows
    if len(rows) <= max_speakers:
        return [list(col) for col in zip(*rows)]
    raise ValueError("score matrix %dx%d has no side of at most %d speakers" % (len(rows), width, max_speakers))
    return rows


def frame_rate(num_frames, duration_s):
    """Frames per second from the tensor's frame count and the audio's duration (about 12.6 for
    the streaming 4-speaker model); None when either is missing or not positive."""
    d = _finite(duration_s)
    if not num_frames or num_frames <= 0 or d is None or d <= 0:
        return None
    return num_frames / d


def mean_probability(values):
    """The mean of finite probabilities clamped to [0, 1]; None when there is none (or any is NaN:
    a segment whose scores are partly unknown has no honest confidence)."""
    total = 0.0
    count = 0
    for x in values:
        v = _finite(x)
        if v is None:
            return None
        total += min(1.0, max(0.0, v))
        count += 1
    if count == 0:
        return None
    return total / count


def frame_speakers(frames, threshold=ACTIVE_THRESHOLD):
    """Per frame, the index of the most probable active speaker, or None for silence."""
    out = []
    for row in frames:
        best = None
        best_p = threshold
        for spk, p in enumerate(row):
            v = _finite(p)
            if v is not None and v >= best_p and (best is None or v > best_p):
                best, best_p = spk, v
        out.append(best)
    return out


def frames_to_runs(assigned):
    """Consecutive frames with the same speaker: [(speaker, first_frame, last_frame_exclusive)]."""
    runs = []
    start = 0
    for i in range(1, len(assigned) + 1):
        if i == len(assigned) or assigned[i] != assigned[start]:
            if assigned[start] is not None:
                runs.append((assigned[start], start, i))
            start = i
    return runs


def merge_runs(runs, fps, gap_s=MERGE_GAP_S):
    """Joins runs of the same speaker separated by less than `gap_s`; each run keeps its frames."""
    merged = []
    for spk, a, b in runs:
        last = merged[-1] if merged else None
        if last is not None and last["speaker"] == spk and (a - last["end"]) / fps < gap_s:
            last["end"] = b
            last["frames"].extend(range(a, b))
        else:
            merged.append({"speaker": spk, "start": a, "end": b, "frames": list(range(a, b))})
    return merged


def frames_to_segments(matrix, duration_s, threshold=ACTIVE_THRESHOLD, gap_s=MERGE_GAP_S, min_s=MIN_SEGMENT_S):
    """Segments `{start_s, end_s, speaker (model index), confidence}` from the score matrix.

    `confidence` is the mean probability of the assigned speaker over the segment's frames (the
    frames that speaker was assigned, not the bridged gap), or None when it cannot be computed.
    """
    frames = orient_frames(matrix)
    fps = frame_rate(len(frames), duration_s)
    if fps is None:
        return [], None
    runs = merge_runs(frames_to_runs(frame_speakers(frames, threshold)), fps, gap_s)
    segments = []
    for r in runs:
        start_s = r["start"] / fps
        end_s = min(r["end"] / fps, float(duration_s))
        if end_s - start_s < min_s:
            continue
        conf = mean_probability(frames[f][r["speaker"]] for f in r["frames"])
        segments.append({"start_s": start_s, "end_s": end_s, "speaker": r["speaker"], "confidence": conf})
    return segments, fps


def assign_labels(segments):
    """Chunk-local labels `speaker_<n>` in order of first appearance: {model index: label}."""
    labels = {}
    for s in segments:
        if s["speaker"] not in labels:
            labels[s["speaker"]] = LABEL_PREFIX + str(len(labels))
    return labels


def speaker_windows(segments, speaker, max_total_s=20.0):
    """The time spans to embed for one speaker: their longest segments, up to `max_total_s`."""
    mine = sorted((s for s in segments if s["speaker"] == speaker), key=lambda s: s["start_s"] - s["end_s"])
    spans = []
    total = 0.0
    for s in mine:
        if total >= max_total_s:
            break
        length = min(s["end_s"] - s["start_s"], max_total_s - total)
        spans.append((s["start_s"], s["start_s"] + length))
        total += length
    return sorted(spans)


def valid_embedding(vector):
    """The embedding as 192 finite floats, or None."""
    if vector is None:
        return None
    values = [_finite(x) for x in vector]
    if len(values) != EMBEDDING_SIZE or any(v is None for v in values):
        return None
    return values


def _round(x, places):
    return None if x is None else round(float(x), places)


def shape_response(duration_s, segments, embeddings, models):
    """The diarize-chunk response: duration, segments with local labels, the labels, one
    fingerprint per labelled speaker that has a valid 192-float embedding, and the model names."""
    labels = assign_labels(segments)
    out_segments = [
        {
            "start_s": _round(s["start_s"], 3),
            "end_s": _round(s["end_s"], 3),
            "speaker": labels[s["speaker"]],
            "confidence": _round(s["confidence"], 4),
        }
        for s in segments
    ]
    fingerprints = {}
    for spk, label in labels.items():
        vec = valid_embedding(embeddings.get(spk))
        if vec is not None:
            fingerprints[label] = [round(v, 6) for v in vec]
    return {
        "duration": _round(duration_s, 3),
        "segments": out_segments,
        "speakers_detected": list(labels.values()),
        "fingerprints": fingerprints,
        "models": {"diarization": models.get("diarization"), "embedding": models.get("embedding")},
    }
