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
