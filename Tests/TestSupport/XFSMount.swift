import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A small XFS filesystem with reflink on, loop-mounted for one test: somewhere `FICLONE` shares extents.
///
/// Gate the tests that make one with `.enabled(if: Capabilities.canMountXFS)`.
public struct XFSMount: Sendable {
    /// The mount point.
    public let path: String
    /// The sparse image file behind it.
    public let image: String

    /// Makes a 512 MiB sparse image in `directory`, formats it XFS with reflink, and loop-mounts it.
    ///
    /// Call ``unmount()`` when done. When formatting or mounting fails, the image is deleted again.
    /// - Parameter directory: An existing directory for the image and the mount point.
    /// - Throws: ``CommandFailed`` when `mkfs.xfs` or `mount` fails, or a `POSIXError` for the image.
    public init(in directory: String) throws {
        image = directory + "/xfs.img"
        path = directory + "/xfs"
        let fd = open(image, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        guard fd >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        let resized = ftruncate(fd, 512 << 20) == 0 ? 0 : errno
        close(fd)
        do {
            guard resized == 0 else { throw POSIXError(POSIXErrorCode(rawValue: resized) ?? .EIO) }
            try runTool("mkfs.xfs", "-q", "-m", "reflink=1", image)
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
            try runTool("mount", "-o", "loop", image, path)
        } catch {
            Self.delete(image)
            throw error
        }
    }

    /// Unmounts the filesystem (lazily when a plain `umount` fails) and deletes the image; records an issue
    /// for each step that fails.
    public func unmount() {
        do { try runTool("umount", path) } catch {
            Issue.record("could not unmount \(path): \(error)")
            do { try runTool("umount", "-l", path) } catch {
                Issue.record("lazy unmount of \(path) failed too: \(error)")
            }
        }
        Self.delete(image)
    }

    private static func delete(_ image: String) {
        do { try FileManager.default.removeItem(atPath: image) } catch {
            Issue.record("could not delete \(image): \(error)")
        }
    }
}

/// Runs `body` with the mount point of a new ``XFSMount`` in `directory`, and unmounts it and deletes its image
/// afterwards, whatever happens.
/// - Throws: What ``XFSMount/init(in:)`` or `body` throws.
@discardableResult
public func withReflinkXFS<R>(in directory: String, _ body: (String) throws -> R) throws -> R {
    let mount = try XFSMount(in: directory)
    defer { mount.unmount() }
    return try body(mount.path)
}
