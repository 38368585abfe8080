import FileIO
import Foundation

/// Opens `path` for reading, insisting on a regular file.
func openRegularFile(_ path: String) throws -> FileDescriptor {
    let file: FileDescriptor
    do {
        file = try FileDescriptor.open(path, O_RDONLY)
    } catch {
        throw CacheError.file(error, path: path, doing: "opening")
    }
    let mode = (try? file.status().st_mode) ?? 0
    guard mode & S_IFMT == S_IFREG else {
        try? file.close()
        let what = mode & S_IFMT == S_IFDIR ? "a directory" : "not a regular file"
        throw CacheError(.invalidArgument, "\(path) is \(what); give a regular file")
    }
    return file
}
