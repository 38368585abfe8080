import FileIO
import Foundation

/// The named staging files `.chunkcache-PID-HEX` of ``PendingFile``, and the sweep of those whose writer died.
enum StagingFiles {
    static let prefix = ".chunkcache-"

    /// Creates a new, locked staging file in `directory`, after removing abandoned ones there.
    static func create(in directory: String) throws -> (FileDescriptor, String) {
        removeAbandoned(in: directory)
        while true {
            let (file, path) = try HandOff.createUniqueFile(in: directory, prefix: prefix, mode: PendingFile.mode)
            if try lockWhileNamed(file, path: path) { return (file, path) }
        }
    }

    /// Gives the locked, unnamed `file` a staging name in `directory`, after removing abandoned ones there.
    static func name(_ file: FileDescriptor, in directory: String) throws(Errno) -> String {
        removeAbandoned(in: directory)
        while true {
            let path = HandOff.uniqueName(in: directory, prefix: prefix)
            do {
                try file.link(to: path)
                return path
            } catch  where error == .fileExists {
                continue  // a name collision: draw again
            }
        }
    }

    /// Locks a file just created under `path`. A sweep may have taken the lock first and removed the name
    /// (the file was unlocked between `open` and `flock`): then it returns `false` and the file is closed.
    private static func lockWhileNamed(_ file: FileDescriptor, path: String) throws -> Bool {
        do {
            try file.lock(.exclusive)
            if try file.status().st_nlink > 0 { return true }
        } catch {
            try? file.close()
            try? FileSystem.unlink(path)
            throw CacheError.file(error, path: path, doing: "locking a new file")
        }
        try? file.close()
        return false
    }

    /// Removes the staging files in `directory` whose writer is gone (their lock can be taken), returning
    /// how many. Best effort: a file that cannot be looked at or removed is left for the next sweep.
    @discardableResult
    static func removeAbandoned(in directory: String) -> Int {
        var candidates: [String] = []
        // The folder may be large (a user's downloads): only names with the prefix are opened.
        try? FileSystem.forEachEntry(in: directory) { entry in
            if entry.name.hasPrefix(prefix) && (entry.kind == .regular || entry.kind == .unknown) {
                candidates.append(directory + "/" + entry.name)
            }
        }
        return candidates.count { removeIfAbandoned($0) }
    }

    private static func removeIfAbandoned(_ path: String) -> Bool {
        // O_NOFOLLOW and O_NONBLOCK: a symlink or a FIFO planted under the prefix is neither followed nor waited on.
        guard let file = try? FileDescriptor.open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK) else { return false }
        defer { try? file.close() }
        guard let opened = try? file.status(), FileKind(mode: opened.st_mode) == .regular,
            (try? file.tryLock(.exclusive)) == true,
            // The name may have moved on since it was opened (a writer renamed its file into place).
            let named = try? FileSystem.status(path, symlinks: .doNotFollow),
            named.st_dev == opened.st_dev && named.st_ino == opened.st_ino
        else { return false }
        return (try? FileSystem.unlink(path)) != nil
    }
}
