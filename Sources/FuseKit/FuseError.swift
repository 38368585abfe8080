import CFuse3
import FileIO

#if canImport(Glibc)
import Glibc
#endif

/// A FUSE session that could not start.
public struct FuseError: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
