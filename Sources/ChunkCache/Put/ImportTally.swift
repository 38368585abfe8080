import FileIO
import Foundation

/// What an import run counted.
struct ImportTally {
    var files = 0, folders = 0, symlinks = 0
    /// Files matched by name, size and time, so not read again (<doc:FileProviderRules#G1>).
    var matched = 0
    var logicalBytes: Int64 = 0
    var newChunks = 0
    /// Entries that could not be taken in.
    var failures: [ImportFailure] = []
}
