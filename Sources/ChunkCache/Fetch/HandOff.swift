import FileIO
import Foundation

/// The files a fetch hands off: private temp files in the store's `tmp/` (clones at a caller's path are ``Destination``'s).
enum HandOff {
    /// Creates a new, empty file in `directory` with a unique name, mode 0600 and `O_EXCL` (B4).
    static func createUniqueFile(in directory: String, prefix: String, mode: mode_t = 0o600) throws -> (FileDescriptor, String) {
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
