import Glibc

/// An inotify instance watching one directory for its entries being created, written and closed, moved in
/// or having their metadata changed (a `touch`): a nonblocking descriptor that becomes readable when one of
/// those happens, for a `DispatchSource` or `poll` to wait on without holding a thread.
public struct DirectoryWatch: Sendable {
    /// The inotify descriptor, nonblocking and close-on-exec.
    public let descriptor: FileDescriptor

    /// `IN_ATTRIB | IN_CLOSE_WRITE | IN_CREATE | IN_MOVED_TO`: what a touch, a write or a rename into the
    /// directory raises.
    static let mask: UInt32 = 0x0000_0004 | 0x0000_0008 | 0x0000_0100 | 0x0000_0080
    /// `IN_NONBLOCK | IN_CLOEXEC` for `inotify_init1`.
    static let flags: Int32 = 0o4000 | 0o2000000

    /// Starts watching `directory`.
    /// - Throws: The errno of `inotify_init1` (`EMFILE` past `fs.inotify.max_user_instances`) or of
    ///   `inotify_add_watch` (`ENOENT`, `ENOSPC` past `max_user_watches`).
    public static func start(_ directory: String) throws(Errno) -> DirectoryWatch {
        let fd = inotify_init1(flags)
        guard fd >= 0 else { throw Errno.current }
        guard inotify_add_watch(fd, directory, mask) >= 0 else {
            let error = Errno.current
            Glibc.close(fd)
            throw error
        }
        return DirectoryWatch(descriptor: FileDescriptor(rawValue: fd))
    }

    /// Reads every pending event; returns the names of the entries they concern (empty when none is pending).
    public func drain() throws(Errno) -> [String] {
        var names: [String] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(descriptor.rawValue, $0.baseAddress, $0.count) }
            if count < 0 {
                let error = Errno.current
                if error == .interrupted { continue }
                if error == .wouldBlock { return names }
                throw error
            }
            if count == 0 { return names }
            names += Self.names(in: buffer[..<count])
        }
    }

    /// The entry names of a buffer of `struct inotify_event`s: `wd`, `mask`, `cookie`, `len` (4 bytes each),
    /// then `len` bytes of NUL-padded name.
    static func names(in events: ArraySlice<UInt8>) -> [String] {
        var names: [String] = []
        var offset = events.startIndex
        while offset + 16 <= events.endIndex {
            let length = events[(offset + 12)..<(offset + 16)].withUnsafeBytes {
                Int($0.loadUnaligned(as: UInt32.self))
            }
            let nameStart = offset + 16
            let nameEnd = min(nameStart + length, events.endIndex)
            let name = events[nameStart..<nameEnd].prefix { $0 != 0 }
            if !name.isEmpty { names.append(String(decoding: name, as: UTF8.self)) }
            offset = nameEnd
        }
        return names
    }

    /// Stops watching.
    public func close() {
        try? descriptor.close()
    }
}

extension FileSystem {
    /// Sets the file's times to now, as `touch`, creating it (mode 0600) when it does not exist.
    public static func touch(_ path: String) throws(Errno) {
        if utimensat(AT_FDCWD, path, nil, 0) == 0 { return }
        let error = Errno.current
        guard error == .noSuchFile else { throw error }
        let file = try FileDescriptor.open(path, O_WRONLY | O_CREAT | O_CLOEXEC, mode: 0o600)
        try file.close()
    }
}
