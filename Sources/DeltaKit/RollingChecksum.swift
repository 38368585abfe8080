/// The weak checksum of a window of bytes that rolls one byte at a time: rsync's (after Adler-32), two sums
/// `a = Σ xᵢ` and `b = Σ (n − i)·xᵢ` over the window's `n` bytes, mixed into 32 bits.
///
/// Rolling is what makes a rolling match O(bytes): the checksum of the window one byte further is computed from
/// this one in a few operations, so every byte position of a new chunk can be looked up in a ``BaseIndex``. It
/// is weak (different windows can share it); a strong hash confirms every candidate. rsync keeps `a` and `b`
/// modulo 2¹⁶; here both are kept modulo 2³² (no block size in use wraps them) and mixed, so windows that differ
/// only in their high sums do not collide. See: Andrew Tridgell and Paul Mackerras, "The rsync algorithm" (1996).
public struct RollingChecksum: Equatable, Sendable {
    private var a: UInt32 = 0
    private var b: UInt32 = 0
    private let count: UInt32

    /// The checksum of `window`, whose length is the length of every window it rolls to.
    public init(_ window: UnsafeRawBufferPointer) {
        count = UInt32(truncatingIfNeeded: window.count)
        var weight = count
        for byte in window {
            a &+= UInt32(byte)
            b &+= weight &* UInt32(byte)
            weight &-= 1
        }
    }

    /// Moves the window one byte on: `leaving` was its first byte, `entering` is the byte after its last.
    @inline(__always)
    public mutating func roll(leaving: UInt8, entering: UInt8) {
        a = a &- UInt32(leaving) &+ UInt32(entering)
        b = b &- count &* UInt32(leaving) &+ a
    }

    /// The two sums mixed into 32 bits (a 64-bit finaliser in the manner of SplitMix64's).
    @inline(__always)
    public var value: UInt32 {
        var mixed = UInt64(a) << 32 | UInt64(b)
        mixed ^= mixed >> 29
        mixed &*= 0xBF58_476D_1CE4_E5B9
        mixed ^= mixed >> 32
        return UInt32(truncatingIfNeeded: mixed)
    }
}
