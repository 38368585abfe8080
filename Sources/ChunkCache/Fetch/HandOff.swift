import FileIO
import Foundation

/// The files a fetch returns: private temp files in the store's `tmp/` and clones at a caller's path.
enum HandOff {
    /// Creates a new, empty file in `directory` with a unique name, mode 0600 and `O_EXCL` (B4).
    static func createUniqueFile(in directory: String, prefix: String, mode: mode_t = 0o600) throws -> (FileDescriptor, String) {
        while true {
            let path = "\(directory)/\(prefix)\(getpid())-\(String(UInt64.random(in: .min ... .max), radix: 16))"
            do {
                return (try FileDescriptor.open(path, O_RDWR | O_CREAT | O_EXCL, mode: mode), path)
            } catch {
                if error == .fileExists { continue }  // a name collision: draw again
                throw CacheError.file(error, path: path, doing: "creating a temp file")
            }
        }
    }

    /// Places a copy of `source` (`length` bytes) at `destination` by the cheapest strategy, keeping holes,
    /// then returns the strategy. The copy is made under a temp name beside the destination and moved into
    /// place atomically, so a reader never sees a half-written file; without `replaceExisting` an existing
    /// destination is `fileExists` and is left alone.
    static func clone(
        _ source: FileDescriptor, length: Int64, to destination: String, replaceExisting: Bool,
        strategies: Set<CloneStrategy>, inspect: (@Sendable (FileDescriptor) -> Void)? = nil
    ) throws -> CloneStrategy {
        let url = URL(fileURLWithPath: destination)
        let directory = url.deletingLastPathComponent().path
        if !replaceExisting && FileManager.default.fileExists(atPath: destination) {
            throw CacheError(.fileExists, "\(destination) already exists; remove it or pass --force to replace it")
        }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw CacheError(.invalidArgument, "the folder of \(destination) does not exist; create \(directory) first")
        }
        let (staging, stagingPath) = try createUniqueFile(in: directory, prefix: ".chunkcache-", mode: 0o644)
        var placed = false
        defer {
            try? staging.close()
            if !placed { unlink(stagingPath) }
        }
        let strategy: CloneStrategy
        do {
            strategy = try FileCloner.clone(from: source, to: staging, length: length, allowed: strategies)
            inspect?(staging)
        } catch {
            throw CacheError.file(error, path: destination, doing: "copying the fetched bytes")
        }
        if replaceExisting {
            guard rename(stagingPath, destination) == 0 else {
                throw CacheError.file(Errno.current, path: destination, doing: "moving the file into place")
            }
        } else {
            // link(2) fails with EEXIST instead of replacing: no window where another file is overwritten.
            guard link(stagingPath, destination) == 0 else {
                throw CacheError.file(Errno.current, path: destination, doing: "moving the file into place")
            }
            unlink(stagingPath)
        }
        placed = true
        return strategy
    }
}
