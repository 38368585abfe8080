import FileIO
import Foundation

/// A read-only run of zero bytes as long as the largest chunk, for zero chunks inside partial ranges.
enum ZeroBytes {
    // calloc'd and never written: the kernel backs it with the shared zero page.
    private nonisolated(unsafe) static let buffer = UnsafeRawBufferPointer(
        start: calloc(1, 1 << ChunkLayout.shifts.upperBound), count: 1 << ChunkLayout.shifts.upperBound)

    static func prefix(_ count: Int) -> UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: buffer[..<count]) }
}
