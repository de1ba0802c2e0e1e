"""The session's real ZooKeeper answers, and each test gets an isolated chroot."""


def test_chroot_is_private(zk) -> None:
    zk.create("/probe", b"x")
    assert zk.get("/probe")[0] == b"x"
    assert zk.get_children("/") == ["probe"]
