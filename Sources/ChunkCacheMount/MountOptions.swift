import ChunkCache
import FileIO
import Foundation
import FuseKit

/// How a domain is mounted.
public struct MountOptions: Sendable {
    /// Let other users than the one who mounted read the mount (FUSE's `allow_other`; needs root or
    /// `user_allow_other` in `/etc/fuse.conf`).
    public var allowOther = false
    /// Mount read-only in the kernel too (`ro`, the default), so every write is `EROFS` whoever makes it (the
    /// kernel's permission check would otherwise answer another user's `EACCES` first), and so is `setfattr …
    /// user.chunkcache.pin`. False (`-o rw`) lets `setfattr` pin; the mount still refuses every write.
    public var readOnly = true
    /// Run `domain sync` this often (origin domains).
    public var syncEvery: Duration?
    /// The FUSE session's threads: the mount's blocking home, where reads of cached bytes decode.
    public var threads = 4
    /// Files opened while not all cached and at most this large are downloaded whole in the background, larger
    /// ones around their repeated misses (``BackgroundFill``); 0 downloads only what is read.
    public var fillBelow: Int64 = 256 << 20

    public init() {}
}
