"""The session's real ZooKeeper answers, and each test gets an isolated chroot."""


def test_chroot_is_private(zk) -> None:
    zk.create("/probe", b"x")
    assert zk.get("/probe")[0] == b"x"
    assert zk.get_children("/") == ["probe"]


def test_delete_tree_removes_every_level(zookeeper_address: str) -> None:
    """The chroots' teardown (tests.support.zk_tree) leaves nothing behind, however deep."""
    import uuid

    from kazoo.client import KazooClient

    from tests.support.zk_tree import delete_tree

    client = KazooClient(hosts=zookeeper_address, timeout=10)
    client.start(timeout=30)
    try:
        root = f"/delete-tree-{uuid.uuid4().hex[:12]}"
        for topic in range(3):
            for partition in range(20):
                client.create(f"{root}/topics/t{topic}/partitions/{partition}/state",
                              b"{}", makepath=True)
        client.create(f"{root}/leaf", b"")
        delete_tree(client, root)
        assert client.exists(root) is None
        delete_tree(client, root)  # already gone: nothing to do, no error
    finally:
        client.stop()
        client.close()
