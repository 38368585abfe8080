import FileIO

/// This process's view of the mounts (`/proc/self/mountinfo`): whether a path is a FUSE mount, and the device
/// numbers its settings are filed under in `/sys/class/bdi`.
public enum MountTable {
    /// One mount: its device (`MAJOR:MINOR`) and its file system type (`fuse.chunkcache`).
    public struct Entry: Sendable, Equatable {
        public let device: String
        public let type: String
    }

    /// The mount at `path` (canonical, as the table writes it), the last one when several are stacked; `nil`
    /// when nothing is mounted there.
    ///
    /// Reads the table rather than `stat`ing the path: a `stat` of a FUSE mount point is a request to its
    /// session, which may be the caller's own and not serving yet.
    public static func entry(at path: String) -> Entry? {
        guard let table = readTable() else { return nil }
        var found: Entry?
        for line in table.split(separator: "\n") {
            // ID PARENT MAJOR:MINOR ROOT MOUNTPOINT OPTIONS [OPTIONAL…] - TYPE SOURCE SUPER-OPTIONS
            let fields = line.split(separator: " ")
            guard fields.count > 4, fields[4] == path, let separator = fields.firstIndex(of: "-"),
                separator + 1 < fields.count
            else { continue }
            found = Entry(device: String(fields[2]), type: String(fields[separator + 1]))
        }
        return found
    }

    /// Whether `path` is a mount of `type` now.
    public static func isMounted(_ path: String, type: String) -> Bool { entry(at: path)?.type == type }

    private static func readTable() -> String? {
        guard let bytes = try? FileSystem.contents(of: "/proc/self/mountinfo") else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }
}
