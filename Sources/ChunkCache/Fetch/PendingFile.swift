import FileIO
import Foundation

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
