"""L6: ``st.export``, spec matching, the input contract, input checks, ExportedProgram."""
