import Foundation

/// Chunks downloaded into one manifest, for the policy to take in.
struct PolicyAdmission: Sendable {
    let itemKey: [UInt8]
    let chunks: [(index: Int64, storedBytes: UInt32)]
}
