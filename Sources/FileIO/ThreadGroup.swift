/// Which process a thread belongs to: the kernel names a requester by its thread (a FUSE request's `pid` is
/// the calling thread's id), while a program is all its threads.
public enum ThreadGroup {
    /// The process (thread group) id of thread `id`, from the `Tgid:` line of `/proc/ID/status`; nil when the
    /// thread is gone or `/proc` cannot be read.
    ///
    /// Uses the `open(2)` and `read(2)` system calls on `/proc/ID/status`.
    public static func process(ofThread id: Int32) -> Int32? {
        guard id > 0, let status = try? FileSystem.contents(of: "/proc/\(id)/status") else { return nil }
        for line in status.split(separator: UInt8(ascii: "\n")) where line.starts(with: Array("Tgid:".utf8)) {
            return Int32(
                String(decoding: line.dropFirst(5).filter { $0 != UInt8(ascii: " ") && $0 != 9 }, as: UTF8.self))
        }
        return nil
    }
}
