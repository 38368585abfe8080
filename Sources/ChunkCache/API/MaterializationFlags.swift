import Foundation

/// Flags of a materialized file, as `NSFileProviderMaterializationFlags`.
public struct MaterializationFlags: OptionSet, Sendable, Hashable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// The file's holes are known zeros. Set only when the whole file is returned (<doc:FileProviderRules#A8>).
    public static let knownSparseRanges = MaterializationFlags(rawValue: 1)

    /// The flags' names, for the CLI.
    public var names: [String] { contains(.knownSparseRanges) ? ["knownSparseRanges"] : [] }
}
