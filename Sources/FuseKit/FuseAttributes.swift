import FileIO

#if canImport(Glibc)
import Glibc
#endif

/// What the kernel is told of a node (its `struct stat`): kind and permissions, size and blocks, owner, and
/// dates.
public struct FuseAttributes: Sendable {
    /// The node's number (`st_ino`).
    public var node: UInt64
    /// Regular file, folder or symbolic link.
    public var kind: FileKind
    /// The permission bits, `0o444` for a file anyone may read.
    public var permissions: UInt32
    /// The number of names the node has (`st_nlink`): 2 for a folder, 1 for anything else.
    public var linkCount: Int
    /// The length in bytes: a file's, or the text of a link's target.
    public var size: Int64 = 0
    /// The 512-byte blocks the node takes (`st_blocks`), what `du` shows.
    public var blocks: Int64 = 0
    /// The size of an efficient read (`st_blksize`).
    public var preferredBlockSize: Int
    /// The owner's user and group ids.
    public var owner: (userID: UInt32, groupID: UInt32)
    /// When the content was last modified (`st_mtim`), in seconds since 1970.
    public var modified: Double
    /// When the node last changed, content or attributes (`st_ctim`), in seconds since 1970.
    public var changed: Double
    /// When the content was last read (`st_atim`), in seconds since 1970.
    public var accessed: Double

    /// The attributes of a node of `kind`; its size and blocks are 0 until set.
    public init(
        node: UInt64, kind: FileKind, permissions: UInt32, linkCount: Int, preferredBlockSize: Int,
        owner: (userID: UInt32, groupID: UInt32), modified: Double, changed: Double, accessed: Double
    ) {
        self.node = node
        self.kind = kind
        self.permissions = permissions
        self.linkCount = linkCount
        self.preferredBlockSize = preferredBlockSize
        self.owner = owner
        self.modified = modified
        self.changed = changed
        self.accessed = accessed
    }

    /// The `struct stat` libfuse sends.
    var status: stat {
        var status = stat()
        status.st_ino = ino_t(node)
        status.st_uid = owner.userID
        status.st_gid = owner.groupID
        status.st_blksize = blksize_t(preferredBlockSize)
        // The S_IFMT bits are the DT_* value shifted left by 12 (see `DTTOIF` in dirent.h).
        status.st_mode = mode_t(kind.rawValue) << 12 | mode_t(permissions)
        status.st_nlink = nlink_t(linkCount)
        status.st_size = off_t(size)
        status.st_blocks = blkcnt_t(blocks)
        status.st_mtim = Self.timespec(modified)
        status.st_ctim = Self.timespec(changed)
        status.st_atim = Self.timespec(accessed)
        return status
    }

    private static func timespec(_ seconds: Double) -> Glibc.timespec {
        let whole = seconds.rounded(.down)
        return Glibc.timespec(tv_sec: Int(whole), tv_nsec: Int((seconds - whole) * 1e9))
    }
}
