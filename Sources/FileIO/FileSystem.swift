import CLinuxShims

#if canImport(Glibc)
import Glibc
#endif

/// The system calls that take a path: one thin wrapper each, throwing the call's ``Errno``.
///
/// The engine makes every such call through here, so each has one place where its errors are named and
/// `EINTR` is handled.
public enum FileSystem {
    // MARK: - Names

    /// Gives the file at `existing` a second name, `new`; an existing `new` is `EEXIST`, never replaced.
    ///
    /// - Throws: ``Errno``: `ENOENT` when `existing` or `new`'s folder is missing, `EEXIST` when `new`
    ///   exists, `EXDEV` across filesystems, `EPERM` where the filesystem has no hard links.
    ///
    /// Uses the `link(2)` system call.
    public static func link(_ existing: String, to new: String) throws(Errno) {
        _ = try valueOrErrno(retryOnInterrupt: false) { Glibc.link(existing, new) }
    }

    /// How ``rename(_:to:options:)`` treats an existing destination.
    public struct RenameOptions: OptionSet, Sendable {
        /// The flag bits.
        public let rawValue: UInt32
        /// The options whose bits are `rawValue`.
        public init(rawValue: UInt32) { self.rawValue = rawValue }

        /// Fail with `EEXIST` instead of replacing an existing destination (`RENAME_NOREPLACE`).
        public static let noReplace = RenameOptions(rawValue: CLinuxShims_RENAME_NOREPLACE)
    }

    /// Moves `source` to `destination` atomically, replacing an existing destination unless `options`
    /// holds ``RenameOptions/noReplace``.
    ///
    /// - Throws: ``Errno``: `ENOENT` when `source` is missing, `EEXIST` with `.noReplace` when
    ///   `destination` exists, `EISDIR` when `destination` is a folder and `source` is not, `EXDEV` across
    ///   filesystems, `EINVAL` when the filesystem does not know `.noReplace`.
    ///
    /// Uses the `rename(2)` system call, or `renameat2(2)` with `RENAME_NOREPLACE`.
    public static func rename(_ source: String, to destination: String, options: RenameOptions = []) throws(Errno) {
        if options.isEmpty {
            _ = try valueOrErrno(retryOnInterrupt: false) { Glibc.rename(source, destination) }
        } else {
            _ = try valueOrErrno(retryOnInterrupt: false) {
                CLinuxShims_renameat2(AT_FDCWD, source, AT_FDCWD, destination, options.rawValue)
            }
        }
    }

    /// Removes the name `path` (not a folder).
    ///
    /// - Throws: ``Errno``: `ENOENT` when `path` is missing, `EISDIR` when it is a folder.
    ///
    /// Uses the `unlink(2)` system call.
    public static func unlink(_ path: String) throws(Errno) {
        _ = try valueOrErrno(retryOnInterrupt: false) { Glibc.unlink(path) }
    }

    /// Creates the folder `path` with `mode` (less the umask).
    ///
    /// - Throws: ``Errno``: `EEXIST` when `path` exists, `ENOENT` when its parent is missing.
    ///
    /// Uses the `mkdir(2)` system call.
    public static func makeDirectory(_ path: String, mode: mode_t) throws(Errno) {
        _ = try valueOrErrno(retryOnInterrupt: false) { Glibc.mkdir(path, mode) }
    }

    /// Removes the empty folder `path`.
    ///
    /// - Throws: ``Errno``: `ENOENT` when `path` is missing, `ENOTDIR` when it is not a folder, `ENOTEMPTY`
    ///   (or `EEXIST`) when it still holds entries.
    ///
    /// Uses the `rmdir(2)` system call.
    public static func removeDirectory(_ path: String) throws(Errno) {
        _ = try valueOrErrno(retryOnInterrupt: false) { Glibc.rmdir(path) }
    }

    /// Removes `path` and, when it is a folder, everything in it; symbolic links are removed, not followed.
    /// Best effort and for scratch trees only: it goes on past entries it cannot remove and reports the first
    /// error.
    ///
    /// - Throws: ``Errno``: `ENOENT` when `path` is missing; the first error of an entry it could not remove.
    ///
    /// Uses the `lstat(2)`, `unlink(2)` and `rmdir(2)` system calls, and `readdir(3)` for folders.
    public static func removeTree(_ path: String) throws(Errno) {
        let kind = FileKind(mode: try status(path, symlinks: .doNotFollow).st_mode)
        guard kind == .directory else { return try unlink(path) }
        var firstError: Errno?
        var entries: [String] = []
        do {
            try forEachEntry(in: path) { entries.append(path + "/" + $0.name) }
        } catch {
            firstError = error as? Errno ?? .invalidArgument
        }
        for entry in entries {
            do throws(Errno) { try removeTree(entry) } catch { firstError = firstError ?? error }
        }
        do throws(Errno) { try removeDirectory(path) } catch { throw firstError ?? error }
        if let firstError { throw firstError }
    }

    /// Creates a new folder, mode 0700, named `prefix` and six random characters, in `parent`, and returns
    /// its path. No other process can have made the same folder.
    ///
    /// - Throws: ``Errno``: `ENOENT` when `parent` is missing, `ENOTDIR` when it is not a folder, `EACCES`
    ///   when it is not writable.
    ///
    /// Uses the `mkdtemp(3)` library call.
    public static func makeUniqueDirectory(in parent: String, prefix: String) throws(Errno) -> String {
        var template = Array((parent + "/" + prefix + "XXXXXX").utf8CString)
        // mkdtemp fills in the X's in place, so the template's bytes are the new path on success.
        return try template.withUnsafeMutableBufferPointer { buffer throws(Errno) in
            guard let made = mkdtemp(buffer.baseAddress!) else { throw Errno.current }
            return String(cString: made)
        }
    }

    /// The target `path`'s symbolic link holds, as written (it may be relative, or name nothing).
    ///
    /// - Throws: ``Errno``: `ENOENT` when `path` is missing, `EINVAL` when it is not a symbolic link,
    ///   `ENAMETOOLONG` when its text does not fit in `PATH_MAX` bytes.
    ///
    /// Uses the `readlink(2)` system call.
    public static func symlinkTarget(_ path: String) throws(Errno) -> String {
        // Linux keeps a link's text under PATH_MAX bytes, so a buffer of PATH_MAX always has room to spare;
        // readlink truncates silently, so a full buffer would mean a cut text: refuse it rather than return it.
        var buffer = [UInt8](repeating: 0, count: Int(PATH_MAX))
        let count = try valueOrErrno(retryOnInterrupt: false) {
            buffer.withUnsafeMutableBytes {
                readlink(path, $0.baseAddress!.assumingMemoryBound(to: CChar.self), $0.count)
            }
        }
        guard count < buffer.count else { throw Errno(rawValue: ENAMETOOLONG) }
        return String(decoding: buffer[..<count], as: UTF8.self)
    }

    /// The absolute path of `path` with every symbolic link, `.` and `..` resolved.
    ///
    /// - Throws: ``Errno``: `ENOENT` when `path` or a link on the way is missing.
    ///
    /// Uses the `realpath(3)` library call.
    public static func canonicalPath(_ path: String) throws(Errno) -> String {
        guard let resolved = realpath(path, nil) else { throw Errno.current }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    // MARK: - Status

    /// Whether ``status(_:symlinks:)`` describes a symbolic link or what it points to.
    public enum SymlinkHandling: Sendable {
        /// Describe the file a symbolic link points to (`stat`).
        case follow
        /// Describe the link itself (`lstat`).
        case doNotFollow
    }

    /// The status of the file at `path`.
    ///
    /// - Throws: ``Errno``: `ENOENT` when `path` (or, when following, the link's target) is missing,
    ///   `ENOTDIR` when a component of it is not a folder.
    ///
    /// Uses the `stat(2)` system call, or `lstat(2)` with `.doNotFollow`.
    public static func status(_ path: String, symlinks: SymlinkHandling = .follow) throws(Errno) -> stat {
        var st = stat()
        switch symlinks {
        case .follow: _ = try valueOrErrno(retryOnInterrupt: false) { stat(path, &st) }
        case .doNotFollow: _ = try valueOrErrno(retryOnInterrupt: false) { Glibc.lstat(path, &st) }
        }
        return st
    }

    /// What ``checkAccess(_:for:)`` asks of a file.
    public struct AccessMode: OptionSet, Sendable {
        /// The flag bits.
        public let rawValue: Int32
        /// The options whose bits are `rawValue`.
        public init(rawValue: Int32) { self.rawValue = rawValue }

        /// The file exists (`F_OK`, the empty set).
        public static let exists: AccessMode = []
        /// The file may be read (`R_OK`).
        public static let read = AccessMode(rawValue: R_OK)
        /// The file may be written (`W_OK`).
        public static let write = AccessMode(rawValue: W_OK)
        /// The file may be executed, or the folder searched (`X_OK`).
        public static let execute = AccessMode(rawValue: X_OK)
    }

    /// Checks that the calling process may use `path` as `mode` says, with its real user and group ids.
    ///
    /// - Throws: ``Errno``: `ENOENT` when `path` is missing, `EACCES` when the access is denied, `EROFS`
    ///   when writing is asked on a read-only filesystem.
    ///
    /// Uses the `access(2)` system call.
    public static func checkAccess(_ path: String, for mode: AccessMode) throws(Errno) {
        _ = try valueOrErrno(retryOnInterrupt: false) { Glibc.access(path, mode.rawValue) }
    }

    /// The status of the filesystem holding `path`: its block size, and its total, free and available blocks.
    ///
    /// - Throws: ``Errno``: `ENOENT` when `path` is missing.
    ///
    /// Uses the `statvfs(3)` library call.
    public static func filesystemStatus(_ path: String) throws(Errno) -> statvfs {
        var info = statvfs()
        _ = try valueOrErrno { statvfs(path, &info) }
        return info
    }

    // MARK: - Folders

    /// Calls `body` with each entry of the folder `directory`, in the order the filesystem gives them,
    /// skipping `.` and `..`. The entries are read as they are reached; the listing is closed afterwards,
    /// also when `body` throws.
    ///
    /// - Throws: ``Errno``: `ENOENT` when `directory` is missing, `ENOTDIR` when it is not a folder,
    ///   `EACCES` when it cannot be read; or what `body` throws.
    ///
    /// Uses the `opendir(3)`, `readdir(3)` and `closedir(3)` library calls (`getdents64(2)`).
    public static func forEachEntry(in directory: String, _ body: (DirectoryEntry) throws -> Void) throws {
        guard let stream = opendir(directory) else { throw Errno.current }
        defer { closedir(stream) }
        try forEachEntry(of: stream, body)
    }

    /// The `readdir` loop of ``forEachEntry(in:_:)`` and ``FileDescriptor/forEachEntry(_:)``.
    static func forEachEntry(of stream: OpaquePointer, _ body: (DirectoryEntry) throws -> Void) throws {
        while true {
            // readdir returns NULL both at the end and on an error: only errno tells them apart.
            errno = 0
            guard let entry = readdir(stream) else {
                if errno != 0 { throw Errno.current }
                return
            }
            // d_name is a NUL-terminated array inside the entry, valid until the next readdir.
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name == "." || name == ".." { continue }
            try body(DirectoryEntry(name: name, kind: FileKind(directoryEntryType: entry.pointee.d_type)))
        }
    }
}
