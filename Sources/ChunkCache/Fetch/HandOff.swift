import FileIO
import Foundation

/// The files a fetch hands off: private temp files in the store's `tmp/` (clones at a caller's path are
/// ``Destination``'s).
enum HandOff {
    /// What ``make(size:in:fill:)`` made.
    enum Made {
        /// The complete file, at this path; the caller owns it now.
        case file(String)
        /// A stored chunk failed its check on an origin domain: no file was left.
        case damaged(DamagedChunk)
    }

    /// Makes a hand-off file: a new file in `directory` (the store's `tmp/`), `size` bytes long, that `fill`
    /// writes. The only place a hand-off file is made, warm (assembled from the store) or cold (written from
    /// a download). It is kept only when `fill` returns `.complete`; on a throw or a damaged chunk it is
    /// removed (``OwnedFile``).
    static func make(size: Int64, in directory: String, fill: (FileDescriptor) throws -> Assembly) throws -> Made {
        var file = try createOwnedFile(in: directory, prefix: "fetch-")
        do {
            try file.descriptor.resize(to: size)
        } catch {
            throw CacheError.file(error, path: file.path, doing: "sizing the temp file")
        }
        switch try fill(file.descriptor) {
        case .complete:
            file.keep()
            return .file(file.path)
        case .damaged(let chunk):
            return .damaged(chunk)
        }
    }

    /// As ``createUniqueFile(in:prefix:mode:)``, owned: closed, and removed unless kept, when it ends.
    static func createOwnedFile(in directory: String, prefix: String) throws -> OwnedFile {
        let (descriptor, path) = try createUniqueFile(in: directory, prefix: prefix)
        return OwnedFile(descriptor, path: path)
    }

    /// Creates a new, empty file in `directory` with a unique name, mode 0600 and `O_EXCL`
    /// (<doc:FileProviderRules#B4>).
    static func createUniqueFile(in directory: String, prefix: String, mode: mode_t = 0o600) throws -> (
        FileDescriptor, String
    ) {
        while true {
            let path = uniqueName(in: directory, prefix: prefix)
            do {
                return (try FileDescriptor.open(path, O_RDWR | O_CREAT | O_EXCL, mode: mode), path)
            } catch {
                if error == .fileExists { continue }  // a name collision: draw again
                throw CacheError.file(error, path: path, doing: "creating a temp file")
            }
        }
    }

    /// A new name `PREFIX PID-HEX` in `directory`: the process id and 64 random bits make a collision
    /// (which `O_EXCL` or `link` still catch) as good as impossible.
    static func uniqueName(in directory: String, prefix: String) -> String {
        "\(directory)/\(prefix)\(getpid())-\(String(UInt64.random(in: .min ... .max), radix: 16))"
    }
}
