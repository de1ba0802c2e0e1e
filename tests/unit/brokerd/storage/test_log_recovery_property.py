"""Property: whatever byte a crash tears, or whatever checksummed byte rots, reopening
yields exactly the batches wholly before the damage, byte for byte, and nothing else.

(The base offset and partition leader epoch fields lie outside a batch's CRC by the
format's design, so flips there are out of scope.)
"""

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from brokerd.storage import Log, LogConfig

from .conftest import FakeClock, batch

CONFIG = LogConfig(segment_bytes=3000, index_interval_bytes=200)
# Examples fsync a lot; on tmpfs that is free, and page-cache semantics are the same.
SCRATCH = "/dev/shm" if Path("/dev/shm").is_dir() else None
UNCHECKSUMMED = set(range(0, 8)) | set(range(12, 16))  # base offset, leader epoch


@dataclass
class Written:
    segment: int  # base offset of its segment
    start: int  # byte position in the segment
    end: int
    next_offset: int


@settings(max_examples=25, deadline=None)
@given(
    sizes=st.lists(st.integers(min_value=1, max_value=400), min_size=1, max_size=25),
    segment_pick=st.floats(min_value=0, max_value=1, exclude_max=True),
    byte_pick=st.floats(min_value=0, max_value=1, exclude_max=True),
    flip=st.booleans(),
)
def test_reopen_after_damage_gives_the_exact_valid_prefix(
    sizes: list[int], segment_pick: float, byte_pick: float, flip: bool
) -> None:
    with tempfile.TemporaryDirectory(dir=SCRATCH) as tmp:
        log = Log(Path(tmp) / "t-0", CONFIG, clean_shutdown=True, clock=FakeClock())
        written: list[Written] = []
        for size in sizes:
            log.append_as_leader(batch(2, value_size=size), 0)
            active = log.segments[-1]
            start = active.size - len(batch(2, value_size=size))
            written.append(Written(active.base_offset, start, active.size, log.log_end_offset))
        everything = log.read(0, 1 << 30).read()
        image = Path(tmp) / "image" / "t-0"
        log.leader_epoch_cache.flush()  # no background checkpoint rename during the copy
        shutil.copytree(log.directory, image)

        target = log.segments[int(segment_pick * len(log.segments))]
        damage = int(byte_pick * target.size)
        path = image / target.log_path.name
        data = bytearray(path.read_bytes())
        if flip:
            holder = next(w for w in written if w.segment == target.base_offset and w.end > damage)
            if damage - holder.start in UNCHECKSUMMED:
                return
            data[damage] ^= 0xFF
        else:
            del data[damage:]
        path.write_bytes(bytes(data))

        recovered = Log(image, CONFIG, clean_shutdown=False, clock=FakeClock())
        valid = [
            w
            for w in written
            if w.segment < target.base_offset or (w.segment == target.base_offset and w.end <= damage)
        ]
        kept = [w for w in valid if w.segment == target.base_offset]
        assert recovered.log_end_offset == (kept[-1].next_offset if kept else target.base_offset)
        valid_bytes = sum(w.end - w.start for w in valid)
        assert recovered.read(0, 1 << 30).read() == everything[:valid_bytes]
