"""An outside anchor for hearth's speech-to-text figure: faster-whisper (the
Python library whose model folders hearth reads, on the same CTranslate2)
against `hearth transcribe`, on the same ten-second note, round by round.

Both get the same Whisper tiny.en folder, int8 on the CPU, beam 5, English,
no timestamps, no voice-activity filter; each is timed from decoded audio to
text (hearth's own figure, printed by `hearth transcribe`, and faster-whisper's
transcription of the decoded samples), so neither pays for loading the model
or reading the file.

Usage (after `make test-speech` and `cargo build --release`):
  pip install --target target/fw faster-whisper==1.2.1
  PYTHONPATH=target/fw python3 benches/voice_anchor.py [ROUNDS]
"""

import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

from faster_whisper import WhisperModel
from faster_whisper.audio import decode_audio

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODEL = os.path.join(ROOT, "models", "whisper-tiny.en")
HEARTH = os.path.join(ROOT, "target", "release", "hearth")
# The passage of benches/voice.rs: about ten seconds at 130 words a minute.
PASSAGE = (
    "Good morning. Please add milk, eggs and fresh bread to the shopping list, "
    "and remind me to call the plumber about the kitchen sink before noon."
)


def note(dir):
    wav, ogg = os.path.join(dir, "note.wav"), os.path.join(dir, "note.ogg")
    subprocess.run(["espeak-ng", "-s", "130", "-w", wav, PASSAGE], check=True)
    subprocess.run(
        ["opusenc", "--quiet", "--bitrate", "32", "--downmix-mono", wav, ogg], check=True
    )
    return ogg


def hearth(config, ogg):
    out = subprocess.run(
        [HEARTH, "--config", config, "transcribe", ogg], capture_output=True, text=True
    )
    found = re.search(r"([\d.]+) s of audio .* transcribed in ([\d.]+) s", out.stderr)
    if out.returncode != 0 or not found:
        sys.exit(f"hearth transcribe failed: {out.stderr}")
    return float(found.group(1)), float(found.group(2)), out.stdout.strip()


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    with tempfile.TemporaryDirectory() as dir:
        ogg = note(dir)
        config = os.path.join(dir, "hearth.toml")
        with open(config, "w") as f:
            f.write(f'[voice]\nmodel = "{MODEL}"\n')
        model = WhisperModel(MODEL, device="cpu", compute_type="int8")
        samples = decode_audio(ogg, sampling_rate=16000)
        theirs, ours = [], []
        for _ in range(rounds):
            seconds, took, ours_text = hearth(config, ogg)
            ours.append(took)
            started = time.perf_counter()
            segments, _ = model.transcribe(
                samples,
                language="en",
                beam_size=5,
                without_timestamps=True,
                vad_filter=False,
                condition_on_previous_text=False,
            )
            their_text = " ".join(s.text.strip() for s in segments)
            theirs.append(time.perf_counter() - started)
        print(f"note: {seconds:.1f} s; {rounds} rounds, medians")
        print(f"hearth transcribe:  {statistics.median(ours):.3f} s  (real-time factor {statistics.median(ours) / seconds:.3f})  {ours_text!r}")
        print(f"faster-whisper:     {statistics.median(theirs):.3f} s  (real-time factor {statistics.median(theirs) / seconds:.3f})  {their_text!r}")
        print(f"hearth / faster-whisper: {statistics.median(ours) / statistics.median(theirs):.2f}")


main()
