import Foundation

/// Where a tracked chunk stands in W-TinyLFU.
enum PolicySegment: UInt8, CaseIterable {
    case window = 1
    case probation = 2
    case protected = 3
    /// Evicted: its frequency is remembered, its bytes are gone.
    case ghost = 4

    /// The `meta` counter of the segment's length.
    var counterName: String {
        switch self {
        case .window: "policyWindow"
        case .probation: "policyProbation"
        case .protected: "policyProtected"
        case .ghost: "policyGhosts"
        }
    }

    /// The `meta` counter of the segment's stored bytes.
    var bytesCounterName: String { counterName + "Bytes" }
}
