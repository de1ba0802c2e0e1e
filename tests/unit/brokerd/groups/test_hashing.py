from brokerd.groups.hashing import java_string_hash, kafka_abs, partition_for


def test_known_java_hashes() -> None:
    assert java_string_hash("") == 0
    assert java_string_hash("a") == 97
    assert java_string_hash("abc") == 96354
    assert java_string_hash("hello") == 99162322
    # "Aa" and "BB" are Java's textbook collision.
    assert java_string_hash("Aa") == java_string_hash("BB") == 2112


def test_hash_wraps_to_signed_32_bits() -> None:
    assert java_string_hash("polygenelubricants") == -(2**31)


def test_non_bmp_character_hashes_as_two_utf16_units() -> None:
    # U+1F600 is the surrogate pair D83D DE00: 31 * 0xD83D + 0xDE00.
    assert java_string_hash("\U0001F600") == 31 * 0xD83D + 0xDE00


def test_kafka_abs_maps_min_value_to_zero_and_negates_others() -> None:
    assert kafka_abs(-(2**31)) == 0
    assert kafka_abs(-5) == 5
    assert kafka_abs(7) == 7


def test_partition_for_uses_kafka_abs() -> None:
    assert partition_for("polygenelubricants") == 0
    assert partition_for("") == 0
    assert partition_for("a") == 97 % 50
    # A negative hash is negated (Math.abs), not sign-masked: masking would give
    # (h & 0x7fffffff) % 50, which differs here.
    negative = next(s for s in (f"group-{i}" for i in range(1000)) if java_string_hash(s) < 0)
    h = java_string_hash(negative)
    assert (-h) % 50 != (h & 0x7FFFFFFF) % 50  # the case tells the two rules apart
    assert partition_for(negative) == (-h) % 50
    assert partition_for(negative, 7) == (-h) % 7
