import FileIO
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The owning file handle that replaces `defer { close; unlink }` (lifetimes in types).
@Suite struct OwnedFileTests {
    /// Whether `descriptor` is still open on the file `identity` (its device and inode) named `path`: a number
    /// another test reuses after the close is open on another file, and one that also got the freed inode
    /// (ext4 hands freed inodes out again at once) has another name.
    private static func isOpen(_ descriptor: FileDescriptor, on identity: (dev_t, ino_t), path: String) -> Bool {
        guard let status = try? descriptor.status(), status.st_dev == identity.0, status.st_ino == identity.1
        else { return false }
        var target = [CChar](repeating: 0, count: 4096)
        let length = readlink("/proc/self/fd/\(descriptor.rawValue)", &target, target.count - 1)
        guard length > 0 else { return false }
        // A removed file's link reads "PATH (deleted)".
        return String(decoding: target[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self).hasPrefix(path)
    }

    private static func identity(_ descriptor: FileDescriptor) throws -> (dev_t, ino_t) {
        let status = try descriptor.status()
        return (status.st_dev, status.st_ino)
    }

    @Test("An OwnedFile closes its descriptor and removes its name when it ends, also on a throw")
    func removedWhenNotKept() throws {
        struct Failed: Error {}
        try withTemporaryDirectory { dir throws in
            let path = dir + "/owned"
            var descriptor = FileDescriptor(rawValue: -1)
            var identity: (dev_t, ino_t) = (0, 0)
            #expect(throws: Failed.self) {
                let file = OwnedFile(try FileDescriptor.open(path, O_RDWR | O_CREAT | O_EXCL), path: path)
                descriptor = file.descriptor
                identity = try Self.identity(descriptor)
                #expect(Self.isOpen(descriptor, on: identity, path: path))
                throw Failed()
            }
            #expect(!Self.isOpen(descriptor, on: identity, path: path))
            #expect(throws: Errno.noSuchFile) { _ = try FileSystem.status(path) }
        }
    }

    @Test("A kept OwnedFile keeps its name and its bytes, and still closes its descriptor")
    func keptFileStays() throws {
        try withTemporaryDirectory { dir throws in
            let path = dir + "/kept"
            var descriptor = FileDescriptor(rawValue: -1)
            var identity: (dev_t, ino_t) = (0, 0)
            do {
                var file = OwnedFile(try FileDescriptor.open(path, O_RDWR | O_CREAT | O_EXCL), path: path)
                descriptor = file.descriptor
                identity = try Self.identity(descriptor)
                try file.descriptor.resize(to: 4096)
                file.keep()
            }
            #expect(!Self.isOpen(descriptor, on: identity, path: path))
            #expect(try FileSystem.status(path).st_size == 4096)
        }
    }
}
