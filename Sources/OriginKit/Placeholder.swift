enum OriginKitPlaceholder {}
