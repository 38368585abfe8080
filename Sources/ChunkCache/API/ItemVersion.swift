/// The two components of an item's version, each at most 128 bytes.
public struct ItemVersion: Hashable, Sendable {
    /// Changes exactly when the bytes change.
    public var contentVersion: [UInt8]
    /// Changes when any metadata changes.
    public var metadataVersion: [UInt8]

    /// The most bytes either component may hold (<doc:FileProviderRules#D1>).
    public static let maxComponentLength = 128

    public init(contentVersion: [UInt8], metadataVersion: [UInt8]) {
        self.contentVersion = contentVersion
        self.metadataVersion = metadataVersion
    }

    /// A version named by a content-version string, with the same string as metadata version.
    public init(_ contentVersion: String) {
        self.init(contentVersion: Array(contentVersion.utf8), metadataVersion: Array(contentVersion.utf8))
    }

    /// The content version as text (the CLI's form).
    public var contentVersionString: String { String(decoding: contentVersion, as: UTF8.self) }
    /// The metadata version as text.
    public var metadataVersionString: String { String(decoding: metadataVersion, as: UTF8.self) }
}
