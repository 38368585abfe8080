import NIOCore
import SigV4

/// Bytes an origin delivered, valid while the `deliver` closure that received them runs.
public struct RemoteBytes: Sendable {
    let buffer: ByteBuffer

    public init(_ buffer: ByteBuffer) { self.buffer = buffer }

    public var count: Int { buffer.readableBytes }

    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try buffer.withUnsafeReadableBytes(body)
    }
}
