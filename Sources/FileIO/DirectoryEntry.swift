import CLinuxShims

#if canImport(Glibc)
import Glibc
#endif

/// One entry of a folder, as ``FileSystem/forEachEntry(in:_:)`` lists it.
public struct DirectoryEntry: Sendable, Hashable {
    /// The entry's name within its folder.
    public var name: String
    /// Its kind; ``FileKind/unknown`` where the filesystem does not say (then `lstat` the entry).
    public var kind: FileKind

    /// An entry named `name` of kind `kind`.
    public init(name: String, kind: FileKind) {
        self.name = name
        self.kind = kind
    }
}
