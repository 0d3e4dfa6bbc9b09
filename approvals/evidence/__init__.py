"""Evidence packs of decided cases: building one (pack), checking one offline (verify), and the
canonical bytes both agree on (encoding)."""
