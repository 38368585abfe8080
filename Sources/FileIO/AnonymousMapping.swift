import CLinuxShims

#if canImport(Glibc)
import Glibc
#endif

/// Pages of memory straight from the kernel, returned to it when the owner goes away.
///
/// Large scratch buffers come from here rather than `malloc`: glibc keeps freed blocks in its heap once its
/// mmap threshold has grown, so a long-lived process would hold on to them.
public struct AnonymousMapping: ~Copyable {
    /// The mapped bytes, zero-filled at first, readable and writable. Valid while the mapping lives: do not
    /// keep the pointer past it.
    public let buffer: UnsafeMutableRawBufferPointer

    /// Maps `byteCount` bytes of private, anonymous memory.
    ///
    /// - Throws: ``Errno``: `EINVAL` for a `byteCount` of zero, `ENOMEM` when the address space is exhausted.
    ///
    /// Uses the `mmap(2)` system call; `munmap(2)` when the value is destroyed.
    public init(byteCount: Int) throws(Errno) {
        let address = mmap(nil, byteCount, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
        guard let address, address != MAP_FAILED else { throw Errno.current }
        buffer = UnsafeMutableRawBufferPointer(start: address, count: byteCount)
    }

    deinit {
        // munmap fails only for a range that is not a mapping, which `init` rules out.
        munmap(buffer.baseAddress, buffer.count)
    }
}
