import Foundation

/// The hot tier's two queues.
enum HotSegment: UInt8 {
    /// Counted, not hot.
    case candidate = 0
    /// Stored `.hot`.
    case hot = 1

    /// The `meta` counter of the segment's length.
    var counterName: String { self == .hot ? HotMeta.chunks : HotMeta.candidates }
}
