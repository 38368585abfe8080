import FileIO
import Foundation

/// A fetch's file at a path the caller named (`fetch --out`), written so that each byte is written once.
///
/// The file is built in the destination's folder and given its name only when it is complete, so a reader
/// never sees half a file and a failure leaves nothing behind. Two routes fill it:
/// - **clone**: where the destination can share blocks with the store's `tmp/` (a reflink filesystem, the
///   same mount), the bytes are assembled in `tmp/` and cloned (`FICLONE`), which writes no data twice;
/// - **in place**: everywhere else the bytes are assembled straight into the new file. Copying from `tmp/`
///   would write every byte twice.
///
/// One `FICLONE` of two empty files decides the route before any byte is written.
struct Destination {
    /// The destination's path.
    let path: String
    /// Its folder, where the new file is made.
    let directory: String
    /// Whether an existing file at ``path`` is replaced; if not, it is `fileExists` and left alone.
    let replaceExisting: Bool

    /// Checks the destination before any work: its folder must exist, and without `replaceExisting` the
    /// destination must not.
    ///
    /// - Throws: `invalidArgument` when the folder is missing or not a folder, `fileExists` when the
    ///   destination exists and may not be replaced.
    init(path: String, replaceExisting: Bool) throws {
        self.path = path
        self.directory = URL(fileURLWithPath: path).deletingLastPathComponent().path
        self.replaceExisting = replaceExisting
        if !replaceExisting && (try? FileSystem.status(path, symlinks: .doNotFollow)) != nil {
            throw CacheError(.fileExists, "\(path) already exists; remove it or pass --force to replace it")
        }
        let folder: stat
        do {
            folder = try FileSystem.status(directory)
        } catch  where error == .noSuchFile || error == .notDirectory {
            throw CacheError(
                .invalidArgument, "the folder of \(path) does not exist; create \(directory) first", underlying: error)
        } catch {
            throw CacheError.file(error, path: directory, doing: "looking at the folder of \(path)")
        }
        guard FileKind(mode: folder.st_mode) == .directory else {
            throw CacheError(
                .invalidArgument,
                "the folder of \(path) does not exist (\(directory) is not a folder); give a path in a folder")
        }
    }

    /// Makes the destination a file of `size` bytes whose contents `assemble` writes (into an empty file
    /// already sized to `size`, leaving holes where it writes nothing), and returns how it was cloned.
    ///
    /// - Parameters:
    ///   - scratch: Where the clone route assembles: the store's `tmp/`.
    ///   - strategies: The clone strategies allowed. Without `.reflink` the clone route is taken whatever the
    ///     filesystem, so tests can run the copying fallbacks.
    ///   - faults: What a test injected (the engine's ``EngineProbes/destination``); none in the product.
    ///   - inspect: Sees the finished file before it is named (tests look at its extents).
    /// - Returns: The clone strategy (`nil` when the file was assembled in place); or, when `assemble` found a
    ///   damaged chunk, that chunk, and the destination is left as it was.
    /// - Throws: What `assemble` throws; `fileExists` when the destination appeared meanwhile without
    ///   `replaceExisting`; the file errors of `CacheError.file`, naming the destination.
    func write(
        size: Int64, scratch: String, strategies: Set<CloneStrategy>,
        faults: DestinationFaults,
        inspect: ((FileDescriptor) -> Void)?, assemble: (FileDescriptor) throws -> Assembly
    ) throws -> Written {
        var pending = try PendingFile.create(in: directory, unnamed: !faults.namedStaging)
        defer { pending.close() }
        faults.stagingCreated?(pending.stagingPath)
        let strategy: CloneStrategy?
        if let source = try cloneSource(for: pending.descriptor, scratch: scratch, strategies: strategies) {
            do {
                try source.descriptor.resize(to: size)
            } catch {
                throw CacheError.file(error, path: source.path, doing: "sizing the temp file")
            }
            if case .damaged(let chunk) = try assemble(source.descriptor) { return .damaged(chunk) }
            do {
                strategy = try FileCloner.clone(
                    from: source.descriptor, to: pending.descriptor, length: size, allowed: strategies)
            } catch {
                throw CacheError.file(error, path: path, doing: "copying the fetched bytes")
            }
            // While the store's temp still exists, so shared extents can be seen.
            inspect?(pending.descriptor)
        } else {
            do {
                try pending.descriptor.resize(to: size)
                if case .damaged(let chunk) = try assemble(pending.descriptor) { return .damaged(chunk) }
            } catch let error as Errno {
                throw CacheError.file(error, path: path, doing: "writing the fetched bytes")
            }
            strategy = nil
            inspect?(pending.descriptor)
        }
        do {
            try pending.place(at: path, replaceExisting: replaceExisting)
        } catch {
            throw CacheError.file(error, path: path, doing: "moving the file into place")
        }
        return .placed(strategy)
    }

    /// What ``write(size:scratch:strategies:faults:inspect:assemble:)`` did.
    enum Written {
        /// The destination is in place, cloned by this strategy (nil: assembled in place).
        case placed(CloneStrategy?)
        /// A stored chunk failed its check on an origin domain: nothing was placed.
        case damaged(DamagedChunk)
    }

    /// A new temp file in `scratch` to assemble into and clone from (removed when it ends), or `nil` when the
    /// destination cannot share its blocks (then the destination is written in place).
    private func cloneSource(
        for destination: FileDescriptor, scratch: String, strategies: Set<CloneStrategy>
    ) throws -> OwnedFile? {
        if strategies.contains(.reflink) {
            // Another filesystem cannot share blocks: skip the probe and its temp file.
            let sameDevice = (try? FileSystem.status(scratch).st_dev) == (try? destination.status().st_dev)
            guard sameDevice else { return nil }
        }
        let file = try HandOff.createOwnedFile(in: scratch, prefix: "fetch-")
        guard !strategies.contains(.reflink) || FileCloner.canReflink(from: file.descriptor, to: destination) else {
            return nil
        }
        return file
    }
}

// MARK: - The file being written

/// The destination's file while it is written: unnamed (`O_TMPFILE`) where the filesystem allows, else
/// under a staging name `.chunkcache-PID-HEX` beside the destination.
///
/// Either way the writer holds an exclusive `flock` on it. An unnamed file vanishes with its writer; a
/// named one outlives a killed writer, and the kernel drops the lock then: ``StagingFiles`` removes
/// such files, whose lock anyone can take, before a new named file is made in the folder.
struct PendingFile {
    let descriptor: FileDescriptor
    /// The staging name, `nil` while the file has none.
    private(set) var stagingPath: String?
    let directory: String

    /// Mode of a destination file (less the umask), as `cp` gives a new file.
    static let mode: mode_t = 0o644

    /// Makes the file in `directory`: unnamed when `unnamed` and the filesystem has `O_TMPFILE`, else named.
    static func create(in directory: String, unnamed: Bool) throws -> PendingFile {
        if unnamed {
            do {
                let file = try FileDescriptor.openUnnamedFile(in: directory, mode: mode)
                // Locked before it can get a name, so a sweep never takes it for abandoned.
                do {
                    try file.lock(.exclusive)
                } catch {
                    try? file.close()
                    throw error
                }
                return PendingFile(descriptor: file, stagingPath: nil, directory: directory)
            } catch let error as Errno where [Errno.notSupported, .isDirectory, .invalidArgument].contains(error) {
                // No O_TMPFILE on this filesystem (EISDIR and EINVAL from kernels or filesystems that
                // predate it): fall back to a name.
            } catch let error as Errno {
                throw CacheError.file(error, path: directory, doing: "creating a new file in the folder")
            }
        }
        let (file, path) = try StagingFiles.create(in: directory)
        return PendingFile(descriptor: file, stagingPath: path, directory: directory)
    }

    /// Gives the file the name `destination`. Without `replaceExisting` an existing destination is `EEXIST`
    /// and stays untouched: the name is only ever taken by a call that cannot overwrite.
    mutating func place(at destination: String, replaceExisting: Bool) throws(Errno) {
        guard let stagingPath else {
            do {
                try descriptor.link(to: destination)
                return
            } catch  where error == .fileExists && replaceExisting {
                // linkat cannot replace: name the file beside the destination, then rename over it.
                let path = try StagingFiles.name(descriptor, in: directory)
                self.stagingPath = path
                try FileSystem.rename(path, to: destination)
                self.stagingPath = nil
                return
            }
        }
        if replaceExisting {
            try FileSystem.rename(stagingPath, to: destination)
        } else {
            do {
                try FileSystem.rename(stagingPath, to: destination, options: .noReplace)
            } catch  where error == .invalidArgument {
                // A filesystem without RENAME_NOREPLACE: link(2) refuses an existing name the same way.
                try FileSystem.link(stagingPath, to: destination)
                try? FileSystem.unlink(stagingPath)
            }
        }
        self.stagingPath = nil
    }

    /// Closes the file. A file that was never placed loses its staging name, if it has one: nothing is
    /// left behind.
    func close() {
        if let stagingPath { try? FileSystem.unlink(stagingPath) }
        try? descriptor.close()
    }
}

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

// MARK: - Test hooks

/// Points where a test steers or stops a fetch's destination, to reach what only a killed process shows.
/// Tests give them to one ``Destination/write(size:scratch:strategies:faults:inspect:assemble:)``, or to every
/// fetch of a store through the probes it opens the store with (``EngineProbes/destination``). The product
/// gives none, and unset they change nothing.
struct DestinationFaults: Sendable {
    /// Never use `O_TMPFILE`, as on a filesystem without it.
    var namedStaging = false
    /// Runs once the destination's file exists, with its staging path (`nil` while it has no name): a test
    /// looks at the folder, or holds the process there for its parent to kill.
    var stagingCreated: (@Sendable (_ stagingPath: String?) -> Void)?
}
