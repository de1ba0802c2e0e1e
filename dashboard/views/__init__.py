"""Console pages: tenant pages (``tenant``), consumer groups (``groups``), operators (``operator``).

Views only parse, authorise and call service functions; another tenant's pages answer 404.
"""
